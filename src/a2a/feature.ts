import type { ApprovalService } from '../approvals/service';
import type { EventStreams } from '../platform/api/sse';
import type { Config } from '../platform/config';
import type { NotifyListener } from '../platform/db/notify-listener';
import type { ScopedRead } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { RunCallbackService } from '../run-callbacks/service';
import type { RunService } from '../runs/service';
import type { WaitpointService } from '../runs/waitpoints';
import { createRunEventReader } from './follow';
import { a2aPushFormat } from './push';
import { a2aRoutes } from './routes';

/**
 * A2A (issue 42 item 2): the Agent Card at `/.well-known/agent-card.json` and the JSON-RPC endpoint
 * `POST /a2a`, where a task is a run. No state of its own: runs, approvals, waitpoints, the run event
 * log and run callbacks answer everything.
 */
export const a2aFeature = {
  name: 'a2a',
  services: {
    /** How a push notification config's callbacks are written: A2A StreamResponses (run-callbacks sends them). */
    a2aPushFormat: () => a2aPushFormat,
  },
  tags: {
    a2a: 'A2A (Agent2Agent): the Agent Card and the JSON-RPC endpoint where a task is a durable run.',
  },
  routes: (runtime: {
    config: Pick<Config, 'PUBLIC_URL' | 'RUN_EVENTS_KEEPALIVE_MS'>;
    logger: Logger;
    read: ScopedRead;
    streams: EventStreams;
    services: {
      runs: RunService;
      approvals: ApprovalService;
      waitpoints: WaitpointService;
      runCallbacks: RunCallbackService;
      runEventsListener: NotifyListener;
    };
  }) =>
    a2aRoutes({
      config: runtime.config,
      logger: runtime.logger,
      streams: runtime.streams,
      runs: runtime.services.runs,
      approvals: runtime.services.approvals,
      waitpoints: runtime.services.waitpoints,
      runCallbacks: runtime.services.runCallbacks,
      listener: runtime.services.runEventsListener,
      readEvents: createRunEventReader(runtime.read),
    }),
};
