import { LIMITS } from '../rules/limits';

/** A tool as discovered at the remote end, before it is named for Weft. */
export interface RemoteTool {
  remoteName: string;
  description: string;
  inputSchema: Record<string, unknown>;
  readOnly: boolean;
  /** An OpenAPI operation: how to make the request. */
  http?: HttpOperation;
}

export interface HttpOperation {
  method: string;
  path: string;
  params: { name: string; in: 'path' | 'query' | 'header' }[];
  /** The JSON request body travels as the input's `body`. */
  body: boolean;
}

/** A tool as registered: stored in the connector's row, and the capability `<connector>.<name>`. */
export interface StoredTool {
  name: string;
  remote_name: string;
  description: string;
  input_schema: Record<string, unknown>;
  read_only: boolean;
  http?: HttpOperation;
}

/** `createIssue`, `create-issue`, `Create Issue` → `create_issue`: what a capability name may hold. */
export function normaliseToolName(remote: string): string {
  return remote
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '');
}

/**
 * Names the remote tools `<connector>.<tool>`, or answers why the list cannot be registered: a name
 * that normalises to nothing, two that normalise alike, a wire name (`<connector>_<tool>`) past 64
 * characters or equal to one of the registry's.
 */
export function registerTools(
  connector: string,
  remote: readonly RemoteTool[],
  registryWireNames: ReadonlySet<string>,
): { tools: StoredTool[] } | { problems: string[] } {
  const problems: string[] = [];
  const byName = new Map<string, string>();
  const tools: StoredTool[] = [];
  for (const tool of remote) {
    const name = normaliseToolName(tool.remoteName);
    const wire = `${connector}_${name}`;
    if (!name) problems.push(`tool '${tool.remoteName}' has no usable name`);
    else if (byName.has(name)) problems.push(`tools '${byName.get(name)}' and '${tool.remoteName}' are both '${name}'`);
    else if (wire.length > LIMITS.connectors.wireNameChars) {
      problems.push(
        `tool '${tool.remoteName}': '${wire}' is longer than ${LIMITS.connectors.wireNameChars} characters`,
      );
    } else if (registryWireNames.has(wire)) problems.push(`tool '${tool.remoteName}': '${wire}' is a built-in tool`);
    else if (tool.inputSchema.type !== undefined && tool.inputSchema.type !== 'object') {
      problems.push(`tool '${tool.remoteName}': its input is not an object`);
    }
    byName.set(name, tool.remoteName);
    tools.push({
      name,
      remote_name: tool.remoteName,
      description: tool.description,
      input_schema: tool.inputSchema,
      read_only: tool.readOnly,
      ...(tool.http ? { http: tool.http } : {}),
    });
  }
  return problems.length > 0 ? { problems } : { tools };
}
