/**
 * One soak ingress process: the deployment's webhook ingress on SOAK_INGRESS_PORT (its own port, so
 * a restart comes back where the balancer sends), operator listener on a free port. Settings as
 * any process reads them (loadConfig: TEMPORAL_ADDRESS, WAKEGATE_APP, WAKEGATE_TASK_QUEUE).
 */
import { loadConfig } from '../../src/config/config';
import { connectClient } from '../../src/config/temporal';
import { startIngress } from '../../src/processes/ingress-listeners';
import { loadApp } from '../../src/runtime/load-app';

async function main(): Promise<void> {
  const config = loadConfig();
  const wakegate = loadApp(config.app);
  const client = await connectClient(config);
  const ingress = await startIngress({
    client,
    taskQueue: config.taskQueue,
    registry: wakegate.registry,
    sources: wakegate.webhookSources,
    config: { ...config.ingress, port: Number(process.env.SOAK_INGRESS_PORT), operatorPort: 0 },
    allowDevSecrets: true,
  });
  process.stdout.write(`LISTENING ${ingress.url}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
