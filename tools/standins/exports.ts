import Fastify, { type FastifyInstance } from 'fastify';

export interface ExportJob {
  id: string;
  campaign: string;
  /** Free-text label the caller may set; the service stores it and can search by it, nothing more. */
  reference?: string;
}

/**
 * Stand-in for a downstream export API with no idempotency key: every POST starts a new export.
 * It can be searched by `reference`, which is what reconciliation uses.
 */
export function exportService(): { app: FastifyInstance; jobs: ExportJob[] } {
  const app = Fastify();
  const jobs: ExportJob[] = [];
  app.post<{ Body: { campaign?: string; reference?: string } }>('/exports', async (req, reply) => {
    if (typeof req.body?.campaign !== 'string') return reply.code(400).send({ error: 'campaign is required' });
    const job: ExportJob = { id: `exp-${jobs.length + 1}`, campaign: req.body.campaign, reference: req.body.reference };
    jobs.push(job);
    return reply.code(201).send(job);
  });
  app.get<{ Querystring: { reference?: string } }>('/exports', async (req) =>
    req.query.reference === undefined ? jobs : jobs.filter((j) => j.reference === req.query.reference),
  );
  return { app, jobs };
}
