import { defineSearchAttributeKey, SearchAttributeType, TypedSearchAttributes } from '@temporalio/common';

/** Every Weft execution carries its workspace, so operators can filter the Temporal UI by it. */
export const WORKSPACE_ID_ATTRIBUTE = defineSearchAttributeKey('WeftWorkspaceId', SearchAttributeType.KEYWORD);

export const workspaceSearchAttributes = (workspaceId: string) =>
  new TypedSearchAttributes([{ key: WORKSPACE_ID_ATTRIBUTE, value: workspaceId }]);
