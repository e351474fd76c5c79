import type { Client, WorkflowHandle } from '@temporalio/client';
import { WithStartWorkflowOperation, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Priority, SignalDefinition, UpdateDefinition, Workflow, WorkflowResultType } from '@temporalio/common';
import type { WorkflowContract } from './contract';
import { findFailureDetails, toDomainError } from './failures';
import { startSearchAttributes } from './search-attributes';

type SignalWithStartOptions = Parameters<Client['workflow']['signalWithStart']>[1];

/**
 * Issue 43 item 1: where a workflow waits in the task queue. The workspace is its fairness key, so
 * while work is backlogged the server hands each workspace its share in turn (`matching.enableFairness`,
 * DISPATCH_SETTINGS) instead of first come, first served, in proportion to the tasks' fairness weights (a
 * run's falls with its workspace's backlog, `src/runs/fair-share.ts`). Activities and child workflows
 * inherit both. System-wide jobs share the empty key. No priority key: Temporal orders priority levels
 * before fairness keys, so one workspace's priority-1 flood would go ahead of every other workspace's
 * runs; a run's `flow.priority` orders it within its workspace only, in Weft (src/runs/priority-gate.ts).
 */
export function queuePriority(workspaceId: string | undefined, fairnessWeight?: number): Priority | undefined {
  if (!workspaceId) return undefined;
  return { fairnessKey: workspaceId, ...(fairnessWeight !== undefined ? { fairnessWeight } : {}) };
}

/**
 * The one way Weft starts a workflow: task queue, id, search attributes and policies all come from
 * the contract, so no caller can forget one.
 */
export class WorkflowStarter {
  constructor(
    private readonly client: Client,
    readonly taskQueue: string,
  ) {}

  options<Args extends unknown[], Result>(contract: WorkflowContract<Args, Result>, args: Args) {
    const workspaceId = contract.workspaceId?.(...args);
    const priority = queuePriority(workspaceId, contract.fairnessWeight?.(...args));
    return {
      workflowId: contract.id(...args),
      taskQueue: this.taskQueue,
      args,
      typedSearchAttributes: startSearchAttributes(contract.type, workspaceId, contract.searchAttributes?.(...args)),
      ...(priority ? { priority } : {}),
      ...(contract.idReusePolicy ? { workflowIdReusePolicy: contract.idReusePolicy } : {}),
      ...(contract.idConflictPolicy ? { workflowIdConflictPolicy: contract.idConflictPolicy } : {}),
      ...(contract.summary ? { staticSummary: contract.summary(...args) } : {}),
      ...(contract.executionTimeout ? { workflowExecutionTimeout: contract.executionTimeout } : {}),
    };
  }

  /** Starts the workflow; when the id is taken (and the contract refuses a second run), the handle of the first. */
  async start<Args extends unknown[], Result>(
    contract: WorkflowContract<Args, Result>,
    ...args: Args
  ): Promise<WorkflowHandle<(...args: Args) => Promise<Result>>> {
    const options = this.options(contract, args);
    try {
      return await this.client.workflow.start<(...args: Args) => Promise<Result>>(contract.type, options);
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
      return this.handle(contract, options.workflowId);
    }
  }

  /**
   * Starts a new run, or answers undefined when one is running under the id already: for callers
   * that must wait on their own run's result, never on another's.
   */
  async startIfIdle<Args extends unknown[], Result>(
    contract: WorkflowContract<Args, Result>,
    ...args: Args
  ): Promise<WorkflowHandle<(...args: Args) => Promise<Result>> | undefined> {
    try {
      return await this.client.workflow.start<(...args: Args) => Promise<Result>>(
        contract.type,
        this.options(contract, args),
      );
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) return undefined;
      throw error;
    }
  }

  /** Signals the workflow, starting it first when it is not running (a queue fed by events). */
  async signalWithStart<Args extends unknown[], Result, SignalArgs extends unknown[]>(
    contract: WorkflowContract<Args, Result>,
    signal: SignalDefinition<SignalArgs>,
    signalArgs: SignalArgs,
    ...args: Args
  ): Promise<void> {
    // The SDK's option type is conditional on the workflow's arguments, which a generic Args
    // cannot resolve; the contract already ties `args` to the workflow, so widen it here.
    const options = { ...this.options(contract, args), signal, signalArgs };
    await this.client.workflow.signalWithStart(contract.type, options as SignalWithStartOptions);
  }

  /** Sends an update and waits for its answer, starting the workflow first when it was lost. */
  executeUpdateWithStart<Args extends unknown[], Result, UpdateResult, UpdateArgs extends unknown[]>(
    contract: WorkflowContract<Args, Result>,
    update: UpdateDefinition<UpdateResult, UpdateArgs>,
    updateArgs: UpdateArgs,
    ...args: Args
  ): Promise<UpdateResult> {
    return this.client.workflow.executeUpdateWithStart(update, {
      args: updateArgs,
      startWorkflowOperation: new WithStartWorkflowOperation<(...args: Args) => Promise<Result>>(contract.type, {
        ...this.options(contract, args),
        workflowIdConflictPolicy: contract.idConflictPolicy ?? 'USE_EXISTING',
      }),
    });
  }

  /**
   * Waits for the workflow's result, at most `deadlineMs`. Past the deadline it throws `expired()`
   * and ends the long poll on the server too; the workflow runs on. A failure that carries a domain
   * error's details is that domain error again; any other failure is thrown as it came.
   */
  async resultWithin<W extends Workflow>(
    handle: WorkflowHandle<W>,
    deadlineMs: number,
    expired: () => Error,
  ): Promise<WorkflowResultType<W>> {
    const abandon = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abandon.abort();
        reject(expired());
      }, deadlineMs);
    });
    try {
      return await Promise.race([this.client.withAbortSignal(abandon.signal, () => handle.result()), deadline]);
    } catch (error) {
      if (abandon.signal.aborted) throw error;
      const failure = findFailureDetails(error);
      throw failure ? toDomainError(failure) : error;
    } finally {
      clearTimeout(timer);
    }
  }

  handle<Args extends unknown[], Result>(
    _contract: WorkflowContract<Args, Result>,
    workflowId: string,
  ): WorkflowHandle<(...args: Args) => Promise<Result>> {
    return this.client.workflow.getHandle<(...args: Args) => Promise<Result>>(workflowId);
  }
}
