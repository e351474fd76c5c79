import type { EntityManager } from 'typeorm';
import type { z } from 'zod';
import type { CapabilityService } from '../capabilities/service';
import { scopesFor } from '../capabilities/service';
import type { FilterPool } from '../filters/pool';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import { withinAgentSpan } from '../platform/telemetry/genai';
import { LIMITS } from '../rules/limits';
import type { AgentModel, AgentTool } from './agent-model';
import { NOT_A_STEP } from './answer-capabilities';
import { stepEntry } from './audit';
import * as auditRepo from './audit-repository';
import { createBudgetWait } from './budget-wait';
import { pinsOf } from './connector-pins';
import type { RunError, RunExecution, RunStatus, RunStep } from './entities';
import { FINISHED_STATUSES } from './entities';
import { recordRunEvent } from './event-repository';
import * as executionRepo from './execution-repository';
import { credentialRevoked, runIdentityLive } from './identity';
import type { GateRelease } from './priority-gate';
import { recordRunSpan } from './run-span';
import { createStepApprovals } from './step-approvals';
import { stepEvent } from './step-completion';
import * as stepRepo from './step-repository';
import { createStepRunner } from './step-runner';
import type { WaiterWaker } from './wake';
import type { LlmMove } from './workflow';

const isFinished = (status: RunStatus) => FINISHED_STATUSES.includes(status);

/**
 * The step executor of agent runs: what the run workflow's activities call (`activities/runs.ts`),
 * each function one activity, safe to repeat. It begins the run, runs a step (`step-runner.ts`:
 * prepare, decide, invoke), keeps the approval state (`step-approvals.ts`), asks the llm agent's
 * model for its next move and finishes the run. The API's half is `service.ts`.
 */
export function createRunSteps(deps: {
  uow: UnitOfWork;
  capabilities: Pick<CapabilityService, 'tools' | 'invoke' | 'describe' | 'find' | 'toolsFor' | 'describeFor'>;
  /** The llm agent's model: the local planner, or OpenAI tool calling when OPENAI_API_KEY is set. */
  agentModel: AgentModel;
  /**
   * Kicked after a transaction that may have queued outbox events: callbacks (a finish, an approval
   * request) or the start of a waiting run that a finished run's concurrency slot went to.
   */
  outbox?: Pick<OutboxRelay, 'kick'>;
  /** After a finish: wakes the runs waiting on the finished run (`runs.wait`), then kicks the outbox. */
  wakeWaiters?: WaiterWaker;
  /** Evaluates the approval rules' input filters, under the trigger filters' budget (issue 32). */
  filters: Pick<FilterPool, 'evaluate'>;
}) {
  const { uow, capabilities } = deps;
  /** A unit of work whose outbox events (run callbacks) leave right after it commits. */
  const afterCommit = async <T>(workspaceId: string, work: (m: EntityManager) => Promise<T>): Promise<T> => {
    const result = await uow({ workspaceId }, work);
    deps.outbox?.kick(workspaceId);
    return result;
  };
  const runner = createStepRunner(deps);
  const stepApprovals = createStepApprovals({ uow, afterCommit });
  const budgetWait = createBudgetWait({ uow, afterCommit });
  /** The tools the run may use: the registry's and its connectors' at the versions it keeps. */
  const toolsOf = async (workspaceId: string, run: RunExecution) => {
    const pins = pinsOf(run);
    const tools = new Map((await capabilities.toolsFor(workspaceId, pins)).map((tool) => [tool.name, tool]));
    const described: AgentTool[] = (await capabilities.describeFor(workspaceId, pins)).map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.input_schema as Record<string, unknown>,
    }));
    return { tools, described };
  };

  return {
    /** QUEUED → RUNNING; answers the plan (step numbers and approvals) and the run's status. */
    async beginRun(workspaceId: string, executionId: string) {
      const begun: { gate?: GateRelease } = {};
      const plan = await uow({ workspaceId }, async (m) => {
        const run = await executionRepo.mustFindExecution(m, executionId);
        begun.gate = await executionRepo.beginExecution(m, workspaceId, executionId);
        const planned = await stepRepo.stepsOf(m, executionId);
        const maxSteps = Number(run.input.max_steps ?? LIMITS.runs.llm.defaultMaxSteps);
        // An llm run resumed by the reconciler keeps its budget: each model call so far left one
        // tool step, except a chosen step not yet run, which the next call answers again.
        const tools = run.agent === 'llm' ? planned.filter((step) => step.kind === 'TOOL') : [];
        const unrun = ['PENDING', 'RUNNING'].includes(tools.at(-1)?.status ?? '') ? 1 : 0;
        return {
          status: (await executionRepo.mustFindExecution(m, executionId)).status,
          maxSteps,
          llmCalls: tools.length - unrun,
          // A rerun's reused steps are done already: the workflow neither waits for their approval nor runs them.
          steps: planned
            .filter((step) => !step.reusedFromStepId)
            .map((step) => ({
              stepNo: step.stepNo,
              tool: step.tool,
              requiresApproval: step.requiresApproval,
            })),
          userId: run.userId,
        };
      });
      // The runs the gate let go as this one began (issue 43 item 2) start now.
      if (begun.gate?.released.length) deps.outbox?.kick(workspaceId);
      return plan;
    },

    decidePolicy: runner.decidePolicy,

    ...stepApprovals,

    ...budgetWait,

    runStep: runner.runStep,

    /** A wait step's waitpoint: read, expired when due, and settled into the step (issue 40 item 3). */
    ...runner.waitSteps,

    /**
     * The llm agent's next move: the model sees the goal, the tools the run's credential may call,
     * and the tool steps so far. A chosen tool call becomes a PENDING step (approval by the run's
     * policy); an unknown tool or an input its schema refuses becomes a FAILED step whose error the
     * model sees next time; a final answer ends the run. The model is called outside any
     * transaction. A step planned but not yet run (a retried activity, or an earlier attempt that
     * planned while this one asked the model) is answered again, never planned twice.
     */
    async planNext(workspaceId: string, executionId: string): Promise<LlmMove> {
      const pendingMove = (steps: readonly RunStep[]): LlmMove | null => {
        const last = steps.at(-1);
        if (!last || (last.status !== 'PENDING' && last.status !== 'RUNNING')) return null;
        return { kind: 'step', stepNo: last.stepNo, tool: last.tool, requiresApproval: last.requiresApproval };
      };
      const toolSteps = async (m: EntityManager) =>
        (await stepRepo.stepsOf(m, executionId)).filter((step) => step.kind === 'TOOL');

      const seen = await afterCommit(workspaceId, async (m) => {
        const run = await executionRepo.mustFindExecution(m, executionId);
        const history = await toolSteps(m);
        const move = pendingMove(history);
        // Before each model turn the run re-checks who it acts as; a revoked credential ends it here.
        if (!move && !isFinished(run.status) && !(await runIdentityLive(m, run))) {
          await executionRepo.finishExecution(m, executionId, {
            status: 'FAILED',
            output: null,
            error: credentialRevoked(null),
          });
          return { run, history, move, ended: true };
        }
        return { run, history, move, ended: isFinished(run.status) };
      });
      if (seen.move) return seen.move;
      // A finished run asks the model nothing; the workflow's finishing write after a final move
      // leaves a finished run as it is and answers its status.
      if (seen.ended) return { kind: 'final', answer: '' };
      const { run, history } = seen;
      const { tools, described: describedTools } = await toolsOf(workspaceId, run);
      // A tool the run's credential may not call is not offered, and a call of it is an unknown tool;
      // nor is one no step may call (an approval's resolve: agents never approve their own steps).
      const callable = (name: string) => {
        const tool = NOT_A_STEP.has(name) ? undefined : tools.get(name);
        return tool && scopesFor(tool).every((scope) => run.principal.scopes.includes(scope)) ? tool : undefined;
      };
      // The model's `chat` span under the run's `invoke_agent` span (GenAI semantic conventions).
      const move = await withinAgentSpan(executionId, () =>
        deps.agentModel.next({
          goal: String(run.input.goal ?? ''),
          tools: describedTools.filter((tool) => callable(tool.name)),
          history,
        }),
      );
      if (move.kind === 'final') return move;

      const tool = callable(move.tool);
      const parsed = tool && !move.refusal ? (tool.input as z.ZodType).safeParse(move.input) : null;
      const refusal = !tool
        ? `Unknown tool ${move.tool}`
        : move.refusal
          ? `${move.tool}: ${move.refusal}`
          : parsed && !parsed.success
            ? `Input refused by ${move.tool}: ${parsed.error.message}`
            : null;
      const policy = run.input.approval ?? 'writes';
      return uow({ workspaceId }, async (m) => {
        await executionRepo.lockExecution(m, executionId);
        const now = await toolSteps(m);
        if (now.length !== history.length) return pendingMove(now) ?? { kind: 'invalid' };
        const step = await stepRepo.insertChosenStep(m, {
          workspaceId,
          executionId,
          tool: move.tool,
          input: move.input,
          requiresApproval:
            policy === 'all' || (policy === 'writes' && (tool?.access === 'write' || tool?.approvalByDefault === true)),
          error: refusal ? { code: 'invalid_tool_call', message: refusal, step: null } : null,
        });
        if (refusal) {
          const link = { workspaceId, executionId, kind: 'TOOL' as const, refId: step.id, entry: stepEntry(step) };
          await recordRunEvent(m, executionId, stepEvent(step, await auditRepo.appendAudit(m, link)));
          return { kind: 'invalid' };
        }
        return { kind: 'step', stepNo: step.stepNo, tool: step.tool, requiresApproval: step.requiresApproval };
      });
    },

    /**
     * Ends the run (unless a cancel ended it first); its output is the llm agent's answer, or the
     * last tool step's result. Answers the final status.
     */
    async finishRun(
      workspaceId: string,
      executionId: string,
      outcome: { status: 'SUCCEEDED' | 'FAILED'; error: RunError | null; answer?: string },
    ): Promise<RunStatus> {
      const ended = await uow({ workspaceId }, async (m) => {
        const done = (await stepRepo.stepsOf(m, executionId)).filter(
          (step) => step.kind === 'TOOL' && step.status === 'SUCCEEDED',
        );
        const last = outcome.answer !== undefined ? { answer: outcome.answer } : (done.at(-1)?.output ?? null);
        const output = outcome.status === 'SUCCEEDED' ? last : null;
        const finished = await executionRepo.finishExecution(m, executionId, { ...outcome, output });
        return { run: await executionRepo.mustFindExecution(m, executionId), finished };
      });
      // The runs waiting on this one go on at once, and its callbacks leave (as a last step's completion does).
      if (deps.wakeWaiters) void deps.wakeWaiters(workspaceId, ended.finished?.woken ?? []);
      else deps.outbox?.kick(workspaceId);
      // The run's `invoke_agent` span, written once, by the write that ended it (a retry finds it ended).
      if (ended.finished) recordRunSpan(ended.run, deps.agentModel.model);
      return ended.run.status;
    },
  };
}

export type RunSteps = ReturnType<typeof createRunSteps>;
