import { defineSearchAttributeKey, SearchAttributeType, TypedSearchAttributes } from '@temporalio/common';

/** Every Weft execution carries its workspace, so operators can filter the Temporal UI by it. */
export const WORKSPACE_ID_ATTRIBUTE = defineSearchAttributeKey('WeftWorkspaceId', SearchAttributeType.KEYWORD);

/** A run's status (`WeftRunStatus = "AWAITING_APPROVAL"`), kept current by the run workflow at every transition. */
export const RUN_STATUS_ATTRIBUTE = defineSearchAttributeKey('WeftRunStatus', SearchAttributeType.KEYWORD);

/** A run's agent (`playbook`, `llm`). */
export const AGENT_ATTRIBUTE = defineSearchAttributeKey('WeftAgent', SearchAttributeType.KEYWORD);

/** Every custom attribute Weft registers (all keywords): the dev server's flags and ensureSearchAttributes. */
export const CUSTOM_SEARCH_ATTRIBUTES = [WORKSPACE_ID_ATTRIBUTE, RUN_STATUS_ATTRIBUTE, AGENT_ATTRIBUTE] as const;

export const workspaceSearchAttributes = (workspaceId: string) =>
  new TypedSearchAttributes([{ key: WORKSPACE_ID_ATTRIBUTE, value: workspaceId }]);
