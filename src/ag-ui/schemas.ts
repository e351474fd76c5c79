import { contentToText } from '@ag-ui/core';
import { RunAgentInputSchema } from '@ag-ui/core/schemas';
import { z } from 'zod';
import { LIMITS } from '../rules/limits';

const { agUi } = LIMITS;
const { goalChars, maxSteps } = LIMITS.runs.llm;

/** The run's goal: the text of the conversation's last user message, with its index. */
export function goalOf(messages: readonly { role: string; content?: unknown }[]) {
  const index = messages.findLastIndex((message) => message.role === 'user');
  if (index < 0) return undefined;
  const content = messages[index]!.content as Parameters<typeof contentToText>[0];
  return { index, text: contentToText(content).trim() };
}

/**
 * AG-UI's RunAgentInput as `POST /v1/ag-ui` takes it: checked by `@ag-ui/core`'s own schema (its
 * issues are this body's 422), within Weft's bounds, with a last user message whose text is the goal.
 * The fields below document the shape; `forwardedProps` may carry the run's `approval` and `max_steps`.
 */
export const AgUiRunRequest = z
  .looseObject({
    threadId: z
      .string()
      .min(1)
      .max(agUi.threadIdChars)
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.:/=-]*$/, 'letters, digits and _ . : / = - (starting with a letter or digit)')
      .describe('The conversation; the run is tagged `ag-ui-thread:<threadId>` (`GET /v1/runs?tag=`).'),
    runId: z
      .string()
      .regex(
        new RegExp(`^[\\x20-\\x7e]{1,${agUi.runIdChars}}$`),
        `At most ${agUi.runIdChars} printable ASCII characters`,
      )
      .describe(
        'The client’s id of this run, the idempotency key `ag-ui:<runId>`: the same request again follows the ' +
          'run it started (the AG-UI events’ `runId` is the `execution_id`).',
      ),
    messages: z
      .array(z.looseObject({ id: z.string(), role: z.string(), content: z.unknown().optional() }))
      .max(agUi.messages)
      .describe(
        'The conversation: the text of its last `user` message is a new run’s goal; the others are not read ' +
          '(nor any, with `resume` or a cancel).',
      ),
    tools: z
      .array(z.looseObject({ name: z.string() }))
      .max(agUi.tools)
      .optional()
      .describe('Front-end tools: accepted, not offered to the model (the run calls the workspace’s own tools).'),
    context: z
      .array(z.looseObject({ description: z.string(), value: z.string() }))
      .max(agUi.context)
      .optional(),
    state: z.unknown().optional().describe('Accepted and not read.'),
    forwardedProps: z
      .looseObject({
        approval: z
          .enum(['writes', 'all', 'none'])
          .optional()
          .describe('Which tool calls wait for a human approval (`writes` by default), as in `POST /v1/runs`.'),
        max_steps: z.number().int().min(1).max(maxSteps).optional(),
        interrupts: z
          .boolean()
          .optional()
          .describe(
            '`false`: the stream goes on through approvals and waitpoints (CUSTOM events only) instead of ending ' +
              'the AG-UI run with an interrupt.',
          ),
        command: z
          .enum(['cancel'])
          .optional()
          .describe(
            '`cancel`: cancel the thread’s run (the one `resume` names, else its newest unfinished one) and stream ' +
              'its end (RUN_FINISHED `outcome: cancelled`); `resume` entries, if any, must be `cancelled`.',
          ),
      })
      .optional(),
    resume: z
      .array(
        z.looseObject({
          interruptId: z.string().min(1).max(100),
          status: z.enum(['resolved', 'cancelled']),
          payload: z.unknown().optional(),
        }),
      )
      .max(agUi.resume)
      .optional()
      .describe(
        'Answers to the interrupts that ended the thread’s previous AG-UI run (AG-UI 1.0). `resolved`: an ' +
          'approval’s payload is `{decision: "approve"|"reject"|"respond", notes?, input?, message?, edits?}`, ' +
          'a waitpoint’s is its output; `cancelled`: set aside (another person answers it). The stream is the ' +
          'rest of the same run, from where it asked.',
      ),
  })
  .superRefine((body, ctx) => {
    const official = RunAgentInputSchema.safeParse(body);
    if (!official.success) {
      for (const issue of official.error.issues) {
        ctx.addIssue({ code: 'custom', path: issue.path as (string | number)[], message: issue.message });
      }
      return;
    }
    // Answers and cancels continue a run: only a new run needs a goal.
    if (body.resume?.length || body.forwardedProps?.command) return;
    const goal = goalOf(body.messages);
    if (!goal?.text) {
      ctx.addIssue({ code: 'custom', path: ['messages'], message: 'The last user message must carry text: the goal' });
    } else if (goal.text.length > goalChars) {
      ctx.addIssue({
        code: 'custom',
        path: ['messages', goal.index, 'content'],
        message: `The goal is at most ${goalChars} characters`,
      });
    }
  })
  .meta({ id: 'AgUiRunAgentInput' });
export type AgUiRunRequest = z.output<typeof AgUiRunRequest>;

/** The AG-UI event types Weft sends (a CUSTOM event's `name` is `weft.<run event type>`). */
const AG_UI_TYPES = [
  'RUN_STARTED',
  'STEP_STARTED',
  'TOOL_CALL_START',
  'TOOL_CALL_ARGS',
  'TOOL_CALL_END',
  'TOOL_CALL_RESULT',
  'STEP_FINISHED',
  'TEXT_MESSAGE_START',
  'TEXT_MESSAGE_CONTENT',
  'TEXT_MESSAGE_END',
  'CUSTOM',
  'RUN_FINISHED',
  'RUN_ERROR',
] as const;

/** Documentation of an AG-UI stream's `data:` lines; `@ag-ui/core`'s EventSchemas is their full definition. */
export const AgUiEvent = z
  .looseObject({
    type: z.enum(AG_UI_TYPES),
    timestamp: z.number().int().optional().describe('When the run event it comes from was written (ms since epoch).'),
    name: z
      .string()
      .optional()
      .describe(
        'CUSTOM: `weft.approval_requested` (value: `{approval_id, step_no, tool, input …}`), ' +
          '`weft.approval_resolved`, `weft.waitpoint_created`, `weft.run_status` … (the run event’s type).',
      ),
    outcome: z
      .looseObject({ type: z.enum(['success', 'interrupt', 'cancelled']) })
      .optional()
      .describe(
        'RUN_FINISHED: `interrupt` (`interrupts`: the run’s open approvals and `run.wait_for` waitpoints, each ' +
          '`{id, reason, message, responseSchema, expiresAt?, toolCallId?, metadata}`, answered by `resume`) or ' +
          '`cancelled`; absent when the run succeeded.',
      ),
  })
  .describe('An AG-UI event (protocol 1.0), as `@ag-ui/encoder` writes it.')
  .meta({ id: 'AgUiEvent' });
