/**
 * The webhook ingress as a process of its own, for the SIGKILL test: settings from the environment
 * (loadConfig), secrets falling back to the dev secrets, Temporal at argv[2]. Prints `LISTENING <url>`.
 */
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../../src/config/config';
import { startIngress } from '../../src/processes/ingress-listeners';
import { oneCallAgents } from './agents';
import { exampleApp, registryOf } from './app';

async function main(): Promise<void> {
  const [address, taskQueue] = [process.argv[2]!, process.argv[3]!];
  const config = loadConfig();
  const client = new Client({ connection: await Connection.connect({ address }) });
  const ingress = await startIngress({
    client,
    taskQueue,
    registry: registryOf(oneCallAgents()),
    sources: exampleApp.webhookSources,
    config: { ...config.ingress, port: 0, operatorPort: 0 },
    allowDevSecrets: true,
  });
  process.stdout.write(`LISTENING ${ingress.url}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
