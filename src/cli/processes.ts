import { z } from 'zod';
import { UsageError } from './output';

/*
 * The commands that run one process of a deployment: `wakegate worker`, `wakegate ingress` and
 * `wakegate queue`. Their flags are checked here; the start-up is src/processes/'s, the same that
 * workers/, `wakegate dev` and `npm start` call.
 */

const Port = z.coerce.number().int().min(0).max(65535);
const Host = z.string().min(1);
const HostPort = z.string().regex(/^(\[[^\]]+\]|[^:\s]+):\d{1,5}$/, 'host:port');

/** Each flag given, checked; a bad one is a usage error naming it. */
function parse<T extends z.ZodRawShape>(shape: T, flags: Record<string, unknown>, names: Record<keyof T, string>): z.infer<z.ZodObject<T>> {
  const parsed = z.object(shape).partial().safeParse(flags);
  if (parsed.success) return parsed.data as z.infer<z.ZodObject<T>>;
  const issue = parsed.error.issues[0]!;
  const key = String(issue.path[0]) as keyof T;
  throw new UsageError(
    `${names[key]} ${JSON.stringify(flags[key as string])}: expected ${issue.message === 'host:port' ? 'host:port' : 'a port (0-65535) or a host'}`,
  );
}

export interface WorkerFlags {
  metricsAddress?: string;
}

/** `wakegate worker`. */
export async function worker(flags: WorkerFlags): Promise<number> {
  const opts = parse({ metricsAddress: HostPort }, { ...flags }, { metricsAddress: '--metrics-address' });
  return (await import('../processes/worker.js')).runWorker(opts);
}

export interface IngressFlags {
  host?: string;
  port?: string;
  operatorHost?: string;
  operatorPort?: string;
}

/** `wakegate ingress`. */
export async function ingress(flags: IngressFlags): Promise<number> {
  const opts = parse(
    { host: Host, port: Port, operatorHost: Host, operatorPort: Port },
    { ...flags },
    {
      host: '--host',
      port: '--port',
      operatorHost: '--operator-host',
      operatorPort: '--operator-port',
    },
  );
  return (await import('../processes/ingress.js')).runIngress(opts);
}

export interface QueueFlags {
  metricsHost?: string;
  metricsPort?: string;
}

/** `wakegate queue`. */
export async function queue(flags: QueueFlags): Promise<number> {
  const opts = parse({ metricsHost: Host, metricsPort: Port }, { ...flags }, { metricsHost: '--metrics-host', metricsPort: '--metrics-port' });
  return (await import('../processes/queue.js')).runQueue(opts);
}
