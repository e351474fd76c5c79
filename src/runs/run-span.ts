import { recordAgentSpan, textMessage } from '../platform/telemetry/genai';
import type { RunExecution } from './entities';

/**
 * A finished run's `invoke_agent <agent>` span (GenAI semantic conventions, genai.ts), written after
 * the commit of the write that ended it: the finishing activity, or a playbook's last step that
 * finished the run in its own transaction. `model`: the llm agent's model, when it asks one.
 */
export function recordRunSpan(
  run: Pick<RunExecution, 'id' | 'agent' | 'createdAt' | 'status' | 'error' | 'input' | 'output'>,
  model?: string,
): void {
  const llm = run.agent === 'llm';
  const answer = (run.output as { answer?: unknown } | null)?.answer;
  recordAgentSpan({
    executionId: run.id,
    agent: run.agent,
    startedAt: run.createdAt,
    status: run.status,
    errorCode: run.error?.code,
    model: llm ? model : undefined,
    input: llm ? [textMessage('user', String(run.input.goal ?? ''))] : run.input,
    output: llm && typeof answer === 'string' ? [textMessage('assistant', answer)] : run.output,
  });
}
