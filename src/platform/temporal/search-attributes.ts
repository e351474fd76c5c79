import type { SearchAttributePair } from '@temporalio/common';
import { defineSearchAttributeKey, SearchAttributeType, TypedSearchAttributes } from '@temporalio/common';

/** Every Weft execution carries its workspace, so operators can filter the Temporal UI by it. */
export const WORKSPACE_ID_ATTRIBUTE = defineSearchAttributeKey('WeftWorkspaceId', SearchAttributeType.KEYWORD);

/** A run's status (`WeftRunStatus = "AWAITING_APPROVAL"`), kept current by the run workflow at every transition. */
export const RUN_STATUS_ATTRIBUTE = defineSearchAttributeKey('WeftRunStatus', SearchAttributeType.KEYWORD);

/** A run's agent (`playbook`, `llm`). */
export const AGENT_ATTRIBUTE = defineSearchAttributeKey('WeftAgent', SearchAttributeType.KEYWORD);

/**
 * What an execution is (`run`, `prompt`, `codeIndex`, `outboxSweep` …), set at start from its contract,
 * so an operator tells executions apart without a codec (their payloads are sealed).
 */
export const KIND_ATTRIBUTE = defineSearchAttributeKey('WeftKind', SearchAttributeType.KEYWORD);

/**
 * What a waiting run waits for (`approval step 2: billing.credits_balance`), set by the run workflow
 * when it starts to wait and cleared when it goes on.
 */
export const WAITING_FOR_ATTRIBUTE = defineSearchAttributeKey('WeftWaitingFor', SearchAttributeType.KEYWORD);

/** A run's tags (`WeftTags = "nightly"`), a keyword list set in its start options (issue 26). */
export const TAGS_ATTRIBUTE = defineSearchAttributeKey('WeftTags', SearchAttributeType.KEYWORD_LIST);

/** Every custom attribute Weft registers: the dev server's flags and ensureSearchAttributes. */
export const CUSTOM_SEARCH_ATTRIBUTES = [
  WORKSPACE_ID_ATTRIBUTE,
  RUN_STATUS_ATTRIBUTE,
  AGENT_ATTRIBUTE,
  KIND_ATTRIBUTE,
  WAITING_FOR_ATTRIBUTE,
  TAGS_ATTRIBUTE,
] as const;

/** The dev server's name for an attribute's type (`--search-attribute WeftTags=KeywordList`). */
export const devServerTypeName = (key: (typeof CUSTOM_SEARCH_ATTRIBUTES)[number]) =>
  key.type === SearchAttributeType.KEYWORD_LIST ? 'KeywordList' : 'Keyword';

export const workspaceSearchAttributes = (workspaceId: string) =>
  new TypedSearchAttributes([{ key: WORKSPACE_ID_ATTRIBUTE, value: workspaceId }]);

/** `runWorkflow` → `run`: the kind an operator filters on (`WeftKind = "codeIndex"`). */
export const workflowKind = (type: string) => type.replace(/Workflow$/, '');

/** The attributes a start sets: the kind always, the workspace when the workflow has one, and its own. */
export const startSearchAttributes = (
  type: string,
  workspaceId: string | undefined,
  extra: readonly SearchAttributePair[] = [],
) =>
  new TypedSearchAttributes([
    { key: KIND_ATTRIBUTE, value: workflowKind(type) },
    ...(workspaceId ? [{ key: WORKSPACE_ID_ATTRIBUTE, value: workspaceId }] : []),
    ...extra,
  ]);
