import type { DataSource } from 'typeorm';
import type { ApprovalService } from '../approvals/service';
import type { CapabilityService } from '../capabilities/service';
import { createFilterPool } from '../filters/pool';
import type { RateLimiter } from '../platform/api/rate-limit';
import type { EventStreams } from '../platform/api/sse';
import type { Authenticator } from '../platform/auth/authenticator';
import type { Config } from '../platform/config';
import type { NotifyListener } from '../platform/db/notify-listener';
import { createNotifyListener } from '../platform/db/notify-listener';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import type { RunCallbackService } from '../run-callbacks/service';
import { createAgentModel } from './agent-model';
import { answerCapabilities } from './answer-capabilities';
import { runStepApprovals } from './approval-subject';
import { budgetApprovals } from './budget-subject';
import { runCapabilities } from './capabilities';
import { RunAuditLink, RunExecution, RunStep } from './entities';
import { RUN_EVENTS_CHANNEL } from './event-repository';
import type { RunEventStreams, RunStreamFormat } from './event-stream';
import { createRunEventStreams } from './event-stream';
import { decisionRecorded, runDispatched, runFlowHeld } from './events';
import { createFlowReleaser } from './flow';
import { startFlowTimer, startRun, wakeWaitingRun } from './outbox-handler';
import { createRunReconciler } from './reconciler';
import { runRoutes } from './routes';
import type { RunService } from './service';
import { createRunService } from './service';
import { createRunSteps } from './steps';
import { runTools } from './tools';
import { waitCapabilities } from './waitpoint-capabilities';
import { waitpointSettled } from './waitpoint-events';
import { waitpointRoutes } from './waitpoint-routes';
import type { WaitpointService } from './waitpoints';
import { createWaitpointService } from './waitpoints';
import { createRunWaker, createWaiterWaker } from './wake';
import { runReconcileWorkflow } from './workflow';

type RecheckConfig = Pick<Config, 'RUN_APPROVAL_RECHECK_SECONDS' | 'RUN_APPROVAL_RECHECKS_PER_RUN'>;

/** How often a suspended run rechecks its approver: the dispatch carries it, a resumed run gets it again. */
const rechecks = (config: RecheckConfig) => ({
  approvalRecheckSeconds: config.RUN_APPROVAL_RECHECK_SECONDS,
  approvalRechecksPerRun: config.RUN_APPROVAL_RECHECKS_PER_RUN,
});

/** Agent runs, their audit links, their steps' approval subject and the reconcile safety net. */
export const runsFeature = {
  name: 'runs',
  services: {
    /** Agent runs as the API calls them (dispatch, read, cancel, rerun, audit). */
    runs: (ctx: {
      uow: UnitOfWork;
      outbox: OutboxRelay;
      temporal: TemporalHandle;
      logger: Logger;
      config: RecheckConfig;
      onClose: (hook: () => Promise<void>) => void;
      services: { capabilities: CapabilityService; runCallbacks: RunCallbackService };
    }) => {
      // Flow keys' expressions (issue 43 item 2) run in a pool of their own, with the filters' budget.
      const filters = createFilterPool();
      ctx.onClose(() => filters.close());
      return createRunService({
        uow: ctx.uow,
        outbox: ctx.outbox,
        temporal: ctx.temporal,
        capabilities: ctx.services.capabilities,
        callbacks: ctx.services.runCallbacks,
        logger: ctx.logger,
        filters,
        ...rechecks(ctx.config),
      });
    },
    /** Held runs' timers (issue 43 item 2): release a key's runs whose start has come. */
    runFlow: (ctx: { uow: UnitOfWork; outbox: OutboxRelay }) => createFlowReleaser(ctx),
    /** Waitpoints as the API lists and completes them (issue 40 item 3). */
    waitpoints: (ctx: { uow: UnitOfWork; outbox: OutboxRelay }) =>
      createWaitpointService({ uow: ctx.uow, outbox: ctx.outbox }),
    /** The run workflow's step executor, which its activities call (begin, step, approval, finish). */
    runSteps: (ctx: {
      uow: UnitOfWork;
      outbox: OutboxRelay;
      temporal: TemporalHandle;
      logger: Logger;
      config: Config;
      onClose: (hook: () => Promise<void>) => void;
      services: { capabilities: CapabilityService };
    }) => {
      // The approval rules' input filters get a pool of their own, with the trigger filters' budget.
      const filters = createFilterPool();
      ctx.onClose(() => filters.close());
      return createRunSteps({
        uow: ctx.uow,
        capabilities: ctx.services.capabilities,
        agentModel: createAgentModel(ctx.config),
        outbox: ctx.outbox,
        // A finish signals the runs waiting on it itself; the outbox's `waitpoint.settled` is the fallback.
        wakeWaiters: createWaiterWaker(ctx),
        filters,
      });
    },
    /** The one LISTEN connection of this process for run events; connected by the first stream. */
    runEventsListener: (ctx: {
      config: Pick<Config, 'DATABASE_URL'>;
      logger: Logger;
      onClose: (hook: () => Promise<void>) => void;
    }) => {
      const listener = createNotifyListener({
        connectionString: ctx.config.DATABASE_URL,
        channel: RUN_EVENTS_CHANNEL,
        logger: ctx.logger,
      });
      ctx.onClose(() => listener.close());
      return listener;
    },
    /** The run event streams (SSE), fed by the process's one LISTEN connection. */
    runEvents: (ctx: {
      read: ScopedRead;
      logger: Logger;
      streams: EventStreams;
      config: Pick<Config, 'RUN_EVENTS_KEEPALIVE_MS'>;
      services: { runEventsListener: NotifyListener };
    }) =>
      createRunEventStreams({
        read: ctx.read,
        listener: ctx.services.runEventsListener,
        logger: ctx.logger,
        keepAliveMs: ctx.config.RUN_EVENTS_KEEPALIVE_MS,
        streams: ctx.streams,
      }),
    /** Resumes or settles runs whose workflow closed or never started (the reconcile schedule). */
    runReconciler: (ctx: {
      dataSource: DataSource;
      uow: UnitOfWork;
      outbox: OutboxRelay;
      temporal: TemporalHandle;
      logger: Logger;
      config: RecheckConfig;
    }) =>
      createRunReconciler({
        dataSource: ctx.dataSource,
        uow: ctx.uow,
        outbox: ctx.outbox,
        temporal: ctx.temporal,
        logger: ctx.logger,
        ...rechecks(ctx.config),
      }),
  },
  tags: {
    runs: 'Agent runs: dispatch and follow executions.',
  },
  entities: [RunExecution, RunStep, RunAuditLink],
  routes: (
    runtime: {
      services: {
        runs: RunService;
        runEvents: RunEventStreams;
        waitpoints: WaitpointService;
        // AG-UI's words for a run stream (`?format=ag-ui`), from src/ag-ui, which depends on runs.
        agUiFormat: RunStreamFormat;
      };
      authenticator: Authenticator;
    },
    rateLimiter?: RateLimiter,
  ) => [
    ...runRoutes(runtime.services.runs, runtime.services.runEvents, { 'ag-ui': runtime.services.agUiFormat }),
    ...waitpointRoutes(runtime.services.waitpoints, runtime.authenticator, rateLimiter),
  ],
  // A step that needs a person waits on an approval of the inbox (`/v1/approvals`, src/approvals).
  approvalSubjects: (ctx: {
    temporal: TemporalHandle;
    logger: Logger;
    onClose: (hook: () => Promise<void>) => void;
    services: { capabilities: Pick<CapabilityService, 'tools' | 'toolsFor'> };
  }) => {
    // Judging an approval's edit may run a rule's input filter (NM-4); workers start only when one does.
    const filters = createFilterPool();
    ctx.onClose(() => filters.close());
    const wake = createRunWaker(ctx);
    // Issue 40 item 4: a step over its run's budget waits on a budget approval.
    return [runStepApprovals({ capabilities: ctx.services.capabilities, wake, filters }), budgetApprovals({ wake })];
  },
  // decision_recorded is for the run's history; nothing handles it (delivered as soon as it is read).
  events: [runDispatched, decisionRecorded, waitpointSettled, runFlowHeld],
  // A committed dispatch: start its run workflow; a settled waitpoint: wake the run that waits on it.
  outboxHandlers: (temporal: TemporalHandle) => [
    startRun(temporal),
    wakeWaitingRun(temporal),
    startFlowTimer(temporal),
  ],
  // Runs as tools (issue 40 item 2) reach the run service lazily: the service itself reads the registry's tools.
  // The answers to a waiting run (issue 42) live here, beside the waits: approvals cannot reach the registry.
  capabilities: (deps: {
    uow: UnitOfWork;
    outbox: Pick<OutboxRelay, 'kick'>;
    runs: () => RunService;
    approvals: () => ApprovalService;
    waitpoints: () => WaitpointService;
  }) => [...runCapabilities(deps), ...runTools(deps), ...waitCapabilities(deps), ...answerCapabilities(deps)],
  schedules: [
    {
      name: 'run-reconcile',
      description:
        'Resumes runs (QUEUED, RUNNING, AWAITING_APPROVAL, WAITING, untouched for 2 minutes) whose workflow closed ' +
        'or never ' +
        'started; settles FAILED a run whose resumed workflow closed unfinished too, CANCELLED one cancelled in ' +
        'Temporal.',
      workflow: runReconcileWorkflow,
      args: [{ minAgeSeconds: 120 }],
      spec: { intervals: [{ every: '5 minutes' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
