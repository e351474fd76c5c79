import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { runCapabilities } from './capabilities';
import { RunApproval, RunAuditLink, RunExecution, RunStep } from './entities';
import type { RunEventStreams } from './event-stream';
import { decisionRecorded, runDispatched } from './events';
import { startRun } from './outbox-handler';
import { runRoutes } from './routes';
import type { RunService } from './service';
import { runReconcileWorkflow } from './workflow';

/** Agent runs, their approvals and audit links, and the reconcile safety net. */
export const runsFeature = {
  name: 'runs',
  tags: {
    runs: 'Agent runs: dispatch and follow executions.',
    approvals: 'Human approvals that suspended runs wait on.',
  },
  entities: [RunExecution, RunStep, RunApproval, RunAuditLink],
  routes: (runtime: { services: { runs: RunService; runEvents: RunEventStreams } }) =>
    runRoutes(runtime.services.runs, runtime.services.runEvents),
  // decision_recorded is for the run's history; nothing handles it (delivered as soon as it is read).
  events: [runDispatched, decisionRecorded],
  // A committed dispatch: start its run workflow.
  outboxHandlers: (temporal: TemporalHandle) => [startRun(temporal)],
  capabilities: (deps: { uow: UnitOfWork; outbox: Pick<OutboxRelay, 'kick'> }) => runCapabilities(deps),
  schedules: [
    {
      name: 'run-reconcile',
      description:
        'Resumes runs (QUEUED, RUNNING, AWAITING_APPROVAL, untouched for 2 minutes) whose workflow closed or never ' +
        'started; settles FAILED a run whose resumed workflow closed unfinished too, CANCELLED one cancelled in ' +
        'Temporal.',
      workflow: runReconcileWorkflow,
      args: [{ minAgeSeconds: 120 }],
      spec: { intervals: [{ every: '5 minutes' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
