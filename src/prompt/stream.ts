import type { Context } from 'koa';
import type { CreditReceipt } from '../credits/repository';
import { describeError } from '../platform/api/errors';
import type { EventStreams } from '../platform/api/sse';
import type { Principal } from '../platform/auth/principal';
import { ConflictError, DomainError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import type { FailureDetails } from '../platform/temporal/failures';
import { detailsOf } from '../platform/temporal/failures';
import type { PromptService } from './service';
import { groundedAnswer } from './service';
import type { AuditInput } from './settlement';
import { requestHash, sourceHash } from './summary';

export const STREAM_STEPS = ['embedding', 'retrieval', 'llm_call', 'parse'] as const;
type Step = (typeof STREAM_STEPS)[number];

const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** The reservation key of a stream: the reconcile pass finds unsettled streams by it. */
export const streamReservationKey = (correlationId: string) => `stream-${correlationId}:reserve`;

const CLIENT_GONE: FailureDetails = {
  code: 'unavailable',
  errorClass: 'ClientGone',
  detail: 'The client left before the answer',
};

const failureOf = (error: unknown): FailureDetails =>
  error instanceof DomainError
    ? detailsOf(error)
    : { code: 'internal', errorClass: error instanceof Error ? error.name : 'Error', detail: 'Internal server error' };

/**
 * POST /v1/ontology/prompt/stream: the query pipeline with each step reported as server-sent
 * events (embedding, retrieval, llm_call, parse: start and done), then `done` with the narrative
 * and citations, or `error`. It costs what a query costs. Like a prompt, it claims its correlation
 * id and its audit row first, and reserves under a key of its own; `done` is sent only after the
 * charge is settled as ok, and an error or a client that leaves gets it refunded. Settling in
 * this process is the fast path: a stream whose process dies is settled by the reconcile pass.
 * Like every stream it follows its credential (platform/api/sse.ts): one that lapses mid-answer ends
 * the stream with an `error` event and is refunded; it needs no lifetime, its model calls have deadlines.
 */
export function createPromptStream(deps: { prompts: PromptService; logger: Logger; streams: EventStreams }) {
  const { prompts, logger } = deps;

  return async function stream(ctx: Context, principal: Principal, question: string): Promise<void> {
    const { workspaceId } = principal;
    const correlationId: string = ctx.state.correlationId;
    const hash = requestHash({ endpoint: 'stream', prompt: question });
    const audit: AuditInput = {
      workspaceId,
      correlationId,
      promptKind: 'stream',
      sourceHash: sourceHash(question),
      requestHash: hash,
      intent: 'query',
      startedAtMs: Date.now(),
    };
    // Refusals (429, 409, 402 …) happen here, as JSON, before the stream opens: the stream's place
    // first, so a refused one claims and charges nothing.
    const admission = deps.streams.admit(principal);
    let receipt: CreditReceipt;
    try {
      const claim = await prompts.claim({ ...audit, requestHash: hash });
      if (!claim.claimed) throw new ConflictError('This correlation id was already used; a stream is not replayed');
      try {
        receipt = await prompts.reserve({
          workspaceId,
          correlationId,
          intent: 'query',
          idempotencyKey: streamReservationKey(correlationId),
        });
      } catch (error) {
        await prompts.fail({ ...audit, ledgerId: null, failure: failureOf(error) });
        throw error;
      }
    } catch (error) {
      admission.release();
      throw error;
    }

    // Settling as abandoned is idempotent, so the client leaving and a failing step may both ask.
    const abandon = (failure: FailureDetails) =>
      prompts
        .abandon({ ...audit, ledgerId: receipt.ledger_id, failure })
        .catch((error) => logger.error({ err: error }, 'stream refund failed; the reconcile pass settles it'));
    let answered = false;

    const body = deps.streams.create(principal, {
      admission,
      onLapse: (lapse) => {
        if (!answered) void abandon({ code: 'unauthenticated', errorClass: 'CredentialLapsed', detail: lapse });
      },
    });
    let clientGone = false;
    // The response closing before it finished means the client left (a request's own 'close'
    // fires as soon as its body has been read, so it cannot tell).
    const leave = () => {
      if (answered || ctx.res.writableFinished) return;
      clientGone = true;
      void abandon(CLIENT_GONE);
    };
    ctx.res.once('close', leave);
    // A client that left while the reservation was being made closed before the listener existed.
    if (ctx.req.socket.destroyed) leave();
    body.respond(ctx);

    const step = async <T>(
      name: Step,
      work: () => Promise<T>,
      summary: (value: T) => object = () => ({}),
    ): Promise<T> => {
      if (clientGone || body.ended) throw new ClientGone();
      body.write(frame(name, { step: name, status: 'start' }));
      const started = performance.now();
      const value = await work();
      if (clientGone || body.ended) throw new ClientGone();
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
          async () => groundedAnswer(raw, context.nodes),
          (parsed) => ({ citations: parsed.citations.length }),
        );
        if (clientGone || body.ended) throw new ClientGone();
        // The charge stands only once recorded as ok, under the reservation's lock: a stream the
        // reconcile pass has already refunded fails here instead of answering for free.
        answered = true;
        await prompts.complete({
          ...audit,
          ledgerId: receipt.ledger_id,
          creditsUsed: receipt.amount,
          nodesCreated: 0,
          edgesCreated: 0,
          answer,
        });
        body.write(frame('done', { narrative: answer.answer, citations: answer.citations, credit_receipt: receipt }));
      } catch (error) {
        if (!(error instanceof ClientGone)) {
          const answer = describeError(error) ?? { status: 500, detail: 'Internal server error' };
          if (answer.status === 500) logger.error({ err: error }, 'prompt stream failed');
          const { status, detail } = answer;
          await abandon(failureOf(error));
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
