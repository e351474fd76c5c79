import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import type { CreditReceipt } from '../credits/repository';
import { refundCredits, reserveCredits } from '../credits/repository';
import { describeError } from '../platform/api/errors';
import type { Principal } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import { PROMPT_CREDIT_KIND } from './model/contract';
import type { PromptService } from './service';

export const STREAM_STEPS = ['embedding', 'retrieval', 'llm_call', 'parse'] as const;
type Step = (typeof STREAM_STEPS)[number];

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/**
 * POST /v1/ontology/prompt/stream: the query pipeline with each step reported as server-sent
 * events (embedding, retrieval, llm_call, parse: start and done), then `done` with the narrative
 * and citations, or `error`. It costs what a query costs; an error or a client that leaves
 * before `done` gets the reservation refunded, so none is left unsettled.
 */
export function createPromptStream(deps: { uow: UnitOfWork; prompts: PromptService; logger: Logger }) {
  const { uow, prompts, logger } = deps;

  return async function stream(ctx: Context, principal: Principal, question: string): Promise<void> {
    const { workspaceId, tenantId } = principal;
    // 402 (and every other refusal) happens here, before the stream opens.
    const receipt: CreditReceipt = await uow({ workspaceId }, (m) =>
      reserveCredits(m, { tenantId, workspaceId, kind: PROMPT_CREDIT_KIND.query }),
    );
    let settled = false;
    const refund = async () => {
      if (settled) return;
      settled = true;
      await uow({ workspaceId }, (m) => refundCredits(m, { ledgerId: receipt.ledger_id }));
    };

    const body = new PassThrough();
    let clientGone = false;
    // The response closing before it finished means the client left (a request's own 'close'
    // fires as soon as its body has been read, so it cannot tell).
    const leave = () => {
      if (settled || ctx.res.writableFinished) return;
      clientGone = true;
      refund().catch((error) => logger.error({ err: error }, 'stream refund failed'));
    };
    ctx.res.once('close', leave);
    // A client that left while the reservation was being made closed before the listener existed.
    if (ctx.req.socket.destroyed) leave();
    ctx.status = 200;
    ctx.set({
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
    });
    ctx.body = body;

    const step = async <T>(
      name: Step,
      work: () => Promise<T>,
      summary: (value: T) => object = () => ({}),
    ): Promise<T> => {
      if (clientGone) throw new ClientGone();
      body.write(frame(name, { step: name, status: 'start' }));
      const started = performance.now();
      const value = await work();
      if (clientGone) throw new ClientGone();
      body.write(
        frame(name, { step: name, status: 'done', ms: Math.round(performance.now() - started), ...summary(value) }),
      );
      return value;
    };

    void (async () => {
      try {
        const embedding = await step('embedding', () => prompts.retrieval.embed(question));
        const context = await step(
          'retrieval',
          () => prompts.retrieval.context(workspaceId, question, embedding),
          (c) => ({
            nodes: c.nodes.length,
          }),
        );
        const raw = await step('llm_call', () => prompts.model.answer(question, context));
        const answer = await step(
          'parse',
          async () => {
            const known = new Set(context.nodes.map((node) => node.id));
            return { answer: raw.answer, citations: [...new Set(raw.citations.filter((id) => known.has(id)))] };
          },
          (parsed) => ({ citations: parsed.citations.length }),
        );
        settled = true; // the charge stands: the answer is delivered
        body.write(frame('done', { narrative: answer.answer, citations: answer.citations, credit_receipt: receipt }));
      } catch (error) {
        if (!(error instanceof ClientGone)) {
          const answer = describeError(error) ?? { status: 500, detail: 'Internal server error' };
          if (answer.status === 500) logger.error({ err: error }, 'prompt stream failed');
          const { status, detail } = answer;
          await refund().catch((refundError) => logger.error({ err: refundError }, 'stream refund failed'));
          body.write(
            frame('error', { status, detail, error_code: error instanceof Error ? error.constructor.name : 'Error' }),
          );
        }
      } finally {
        body.end();
      }
    })();
  };
}

class ClientGone extends Error {}
