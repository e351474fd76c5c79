import type { ApprovalService } from '../approvals/service';
import type { EventStreams } from '../platform/api/sse';
import type { ScopedRead } from '../platform/db/unit-of-work';
import type { RunEventStreams } from '../runs/event-stream';
import type { RunService } from '../runs/service';
import type { WaitpointService } from '../runs/waitpoints';
import type { AgUiAgent } from './agent';
import { createAgUiAgent } from './agent';
import { createAgUiFormat } from './format';
import { agUiRoutes } from './routes';

/** AG-UI (issue 42 item 3): front ends that speak AG-UI start and follow durable llm runs. */
export const agUiFeature = {
  name: 'ag-ui',
  services: {
    /** Run event streams in AG-UI's words (also `GET /v1/runs/{execution_id}/events?format=ag-ui`). */
    agUiFormat: (ctx: { read: ScopedRead }) => createAgUiFormat({ read: ctx.read }),
    /** `POST /v1/ag-ui`: a RunAgentInput starts a run and follows it, answers its interrupts, or cancels it. */
    agUiAgent: (ctx: {
      read: ScopedRead;
      streams: EventStreams;
      services: {
        runs: RunService;
        runEvents: RunEventStreams;
        approvals: ApprovalService;
        waitpoints: WaitpointService;
      };
    }) =>
      createAgUiAgent({
        runs: ctx.services.runs,
        approvals: ctx.services.approvals,
        waitpoints: ctx.services.waitpoints,
        events: ctx.services.runEvents,
        streams: ctx.streams,
        read: ctx.read,
      }),
  },
  tags: {
    'ag-ui': 'AG-UI: front ends (CopilotKit, `@ag-ui/client`) start and follow durable agent runs.',
  },
  routes: (runtime: { services: { agUiAgent: AgUiAgent } }) => agUiRoutes(runtime.services.agUiAgent),
};
