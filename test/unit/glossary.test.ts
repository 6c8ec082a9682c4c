import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/*
 * The code speaks the glossary ("Words" in docs/ARCHITECTURE.md): one meaning per word. Each rule
 * below is a use the glossary rules out, searched for in the product code (what eslint.config.mjs
 * counts as product); a hit names its file and line.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const PRODUCT = ['src', 'workflows', 'activities', 'workers', 'schedules'];

interface Banned {
  word: string;
  why: string;
  pattern: RegExp;
  /** Files where the word has its glossary meaning and may stand as written. */
  except?: string[];
}

export const BANNED: Banned[] = [
  {
    word: 'offer',
    why: 'an offer is only an event sent to its coalescer: tools and effects are given (or shown) to a model',
    pattern: /\b(offer(s|ed|ing)?\b[^.;\n]{0,30}\b(model|tools?)\b|\b(tools?|effects?|model)\b[^.;\n]{0,20}\boffered\b)/i,
  },
  {
    word: 'decision',
    why: "the decision is the gate's answer for a wake: a union of its values is derived from Decision, never copied",
    pattern: /(?<!Extract<\w*Decision,\s*)'started'\s*\|\s*'coalesced'/,
    except: ['src/core/decision.ts'],
  },
  {
    word: 'admit',
    why: "to admit is to let a delivery in: a halted gate still admits every wake (it holds its run), so a halt does not 'stop admitting'",
    pattern: /\bstop(s|ping)? admitting\b/i,
  },
  { word: 'StepTool', why: 'a tool as a model is given it is a ModelTool', pattern: /\bStepTool\b/ },
  { word: 'WakeDiff', why: 'a shadow report compares runs: RunDiff', pattern: /\bWakeDiff\b/ },
  {
    word: 'batch',
    why: 'a batch is only the events a coalescer gathers for one run: offers and delivery ids queue and go out in sends (OfferQueue, DeliveryQueue), permits are leased in blocks',
    pattern: /\b(Offer|Delivery)Batcher\b|\b(offer|delivery)-batcher\b|\bbatch(er|ers|ed|ing)\b|\bin batches\b|\bMAX_BATCH\b|\b(lease)?batchMs\b/i,
  },
  {
    word: 'run key',
    why: "a gate's answer names the run by its run key (WakeAnswer.runKey); workflowId is a Temporal handle's",
    pattern: /\b\w*[aA]nswers?(\[\w*\]|\.wakes\[\w*\])?!?\??\.workflowId\b/,
  },
  {
    word: 'decision',
    why: "the decision is the gate's answer for a wake: a final answer with its plan is a FinalPlan, a person's approve or reject an ApprovalRuling, the default answer's field is `conclusion`",
    pattern: /\b(Final|Approval)Decision\b|\bdecision\\?["']?\s*:\s*(z\.enum\(\s*\[\s*)?\\?["']?(commit|no_op)\b|\.decision\s*===?\s*'(commit|no_op)'/,
  },
  {
    word: 'turn',
    why: 'one request to a model and its reply is a turn (ModelTurn, TurnRequest, TurnReply, activity modelTurn): a step is any activity of a run, a call is a tool call',
    pattern:
      /\bModelStep\b|\bStep(Request|Reply)\b|\bmodelCall\b|\bMODEL_CALL_RETRY\b|\bchargedModelCall\b|\bmodel[ -]steps?\b|\bmodel calls?\b(?! (it|them)\b)/i,
  },
];

function productFiles(): string[] {
  return execFileSync(
    'git',
    ['ls-files', '--cached', '--others', '--exclude-standard', ...PRODUCT.map((p) => `${p}/*.ts`), ...PRODUCT.map((p) => `${p}/**/*.ts`)],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  )
    .split('\n')
    .filter(Boolean)
    .filter((f, i, all) => all.indexOf(f) === i);
}

/** Every use of a banned word in these files' text, as `file:line: word (the line)`. */
export function bannedUses(files: { file: string; text: string }[]): string[] {
  const hits: string[] = [];
  for (const { file, text } of files)
    text.split('\n').forEach((line, i) => {
      for (const b of BANNED) if (!b.except?.includes(file) && b.pattern.test(line)) hits.push(`${file}:${i + 1}: ${b.word}: ${line.trim()}`);
    });
  return hits;
}

test('the product code uses no word against the glossary', () => {
  const files = productFiles();
  assert.ok(files.length > 100, `read ${files.length} product files`);
  const hits = bannedUses(files.map((file) => ({ file, text: readFileSync(path.join(ROOT, file), 'utf8') })));
  assert.deepEqual(hits, [], BANNED.map((b) => `${b.word}: ${b.why}`).join('\n'));
});

test('each rule finds what it bans and lets the glossary meaning through', () => {
  const hit = (text: string, file = 'src/x.ts') => bannedUses([{ file, text }]).length;
  assert.equal(hit('// Tools are offered with their schemas'), 1);
  assert.equal(hit('// The model is offered its JSON Schema'), 1);
  assert.equal(hit('// an event offered to its coalescer'), 0);
  assert.equal(hit("type D = 'started' | 'coalesced' | 'skipped';"), 1);
  assert.equal(hit("type D = 'started' | 'coalesced' | 'skipped';", 'src/core/decision.ts'), 0);
  assert.equal(hit("type D = Extract<Decision, 'started' | 'coalesced'>;"), 0, 'derived from Decision');
  assert.equal(hit("f(d: 'started' | 'coalesced') {}"), 1, 'a union copied by hand');
  assert.equal(hit('Stop admitting (new wakes are held)'), 1);
  assert.equal(hit('the wakes the gate admits'), 0);
  assert.equal(hit('const t: StepTool = x'), 1);
  assert.equal(hit('const q = new OfferBatcher(client)'), 1);
  assert.equal(hit("import { DeliveryBatcher } from '../run/delivery-batcher';"), 1);
  assert.equal(hit('// offers to one coalescer are batched into one update'), 1);
  assert.equal(hit('// permits are leased in batches'), 1);
  assert.equal(hit('setTimeout(send, this.opts.batchMs)'), 1);
  assert.equal(hit('// the event joins the pending batch'), 0, 'the events a coalescer gathers');
  assert.equal(hit('const next: Batch = machine.open(e, nowMs);'), 0);
  assert.equal(hit('return client.workflow.getHandle(answer.workflowId);'), 1);
  assert.equal(hit('const id = gateAnswer.wakes[0]!.workflowId;'), 1);
  assert.equal(hit('return client.workflow.getHandle(answer.runKey);'), 0, 'the run key');
  assert.equal(hit('const id = handle.workflowId;'), 0, "a Temporal handle's workflow ID");
  assert.equal(hit('function commit(final: FinalDecision) {}'), 1);
  assert.equal(hit("approveSignal = defineSignal<[ApprovalDecision]>('approve');"), 1);
  assert.equal(hit("  decision: z.enum(['commit', 'no_op']),"), 1);
  assert.equal(hit('text: \'{"decision":"commit","summary":"x"}\''), 1);
  assert.equal(hit("if (answer.decision === 'no_op') return { noOp: answer.summary };"), 1);
  assert.equal(hit("  conclusion: z.enum(['commit', 'no_op']),"), 0, "the default answer's field");
  assert.equal(hit("if (answer.decision === 'started') return;"), 0, "the gate's decision");
  assert.equal(hit('const turn: ModelStep = aiSdkModel(m);'), 1);
  assert.equal(hit('const r: StepReply = await model(req);'), 1);
  assert.equal(hit('reply = await modelCall({ ...req, maxOutputTokens });'), 1);
  assert.equal(hit('// a cheap check before any model call'), 1);
  assert.equal(hit('// one model step through the AI SDK'), 1);
  assert.equal(hit('reply = await modelTurn({ ...req, maxOutputTokens }); // one model turn'), 0, 'the turn');
  assert.equal(hit('// the name the model calls it by'), 0, 'a model calling a tool');
  assert.equal(hit('// a step: a model turn or a tool call (policy.steps)'), 0);
});
