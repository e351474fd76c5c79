import { Foundation1763780000000 } from './1763780000000-foundation';
import { OntologyConfig1763780001000 } from './1763780001000-ontology-config';
import { AuthLookups1763780002000 } from './1763780002000-auth-lookups';
import { ScopedRead1763780002100 } from './1763780002100-scoped-read';
import { Graph1763780003100 } from './1763780003100-graph';
import { Search1763780004000 } from './1763780004000-search';
import { Prompt1763780005000 } from './1763780005000-prompt';
import { Merges1763780006000 } from './1763780006000-merges';
import { GraphComponents1763780007100 } from './1763780007100-graph-components';
import { GraphNameSearch1763780007200 } from './1763780007200-graph-name-search';
import { SearchCovering1763780007300 } from './1763780007300-search-covering';
import { KeyMembership1763780007400 } from './1763780007400-key-membership';
import { PromptSettlement1763780008100 } from './1763780008100-prompt-settlement';
import { DegreeBackfill1763780008200 } from './1763780008200-degree-backfill';
import { CreditSettlement1763780008400 } from './1763780008400-credit-settlement';
import { OutboxDeadLetters1763780008410 } from './1763780008410-outbox-dead-letters';
import { EmbeddingBackfill1763780008420 } from './1763780008420-embedding-backfill';
import { CredentialHardening1763780008500 } from './1763780008500-credential-hardening';
import { Capabilities1763780008700 } from './1763780008700-capabilities';
import { Agents1763780008710 } from './1763780008710-agents';
import { Runs1763780008800 } from './1763780008800-runs';
import { WebhookTriggers1763780009000 } from './1763780009000-webhook-triggers';
import { WebhookIntakeWrites1763780009010 } from './1763780009010-webhook-intake-writes';
import { CodeGraph1763780009200 } from './1763780009200-code-graph';
import { LedgerReads1763780009300 } from './1763780009300-ledger-reads';
import { WebhookTriggerRevision1763780009450 } from './1763780009450-webhook-trigger-revision';
import { WebhookDeliveryReferences1763780009500 } from './1763780009500-webhook-delivery-references';
import { OperatorTokens1763780010000 } from './1763780010000-operator-tokens';
import { CodeIndexBatches1763780010010 } from './1763780010010-code-index-batches';
import { ApprovalSeparation1763780010100 } from './1763780010100-approval-separation';
import { WebhookIntakeLimits1763780010200 } from './1763780010200-webhook-intake-limits';
import { DefinerGrants1763780010300 } from './1763780010300-definer-grants';
import { OutboxDeadLetterCount1763780010400 } from './1763780010400-outbox-dead-letter-count';
import { CodeIndexBatchPurge1763780010600 } from './1763780010600-code-index-batch-purge';
import { WebhookSignatureSchemes1763780010700 } from './1763780010700-webhook-signature-schemes';
import { RunEvents1763780011100 } from './1763780011100-run-events';
import { RunCallbacks1763780011200 } from './1763780011200-run-callbacks';
import { RunCallbackRetention1763780011210 } from './1763780011210-run-callback-retention';
import { RunSchedules1763780011300 } from './1763780011300-run-schedules';
import { RunControl1763780011400 } from './1763780011400-run-control';
import { OAuth1763780011600 } from './1763780011600-oauth';
import { MetricsSnapshot1763780012000 } from './1763780012000-metrics-snapshot';
import { KeywordSearch1763780012400 } from './1763780012400-keyword-search';
import { Communities1763780012410 } from './1763780012410-communities';
import { ApprovalRules1763780012600 } from './1763780012600-approval-rules';
import { ApprovalEdits1763780012610 } from './1763780012610-approval-edits';
import { ApprovalDeadlinesQuorum1763780013000 } from './1763780013000-approval-deadlines-quorum';
import { GraphVersions1763780013100 } from './1763780013100-graph-versions';
import { MergeUndo1763780013200 } from './1763780013200-merge-undo';
import { ChangeSets1763780014000 } from './1763780014000-change-sets';
import { CredentialLive1763780015000 } from './1763780015000-credential-live';
import { StoredPrincipal1763780015500 } from './1763780015500-stored-principal';
import { CommunityForcedRefreshes1763780016100 } from './1763780016100-community-forced-refreshes';
import { GithubReplayGuard1763780016200 } from './1763780016200-github-replay-guard';
import { CredentialLineage1763780016500 } from './1763780016500-credential-lineage';
import { ApprovalSubjects1763780017000 } from './1763780017000-approval-subjects';
import { Waitpoints1763780018000 } from './1763780018000-waitpoints';
import { RunChildren1763780018500 } from './1763780018500-run-children';
import { RunBudgets1763780019000 } from './1763780019000-run-budgets';
import { Connectors1763780020000 } from './1763780020000-connectors';
import { TriggerFilterSuspension1763780021000 } from './1763780021000-trigger-filter-suspension';
import { RunQueueMetrics1763780021100 } from './1763780021100-run-queue-metrics';
import { RunPriority1763780021200 } from './1763780021200-run-priority';
import { RunFlow1763780021500 } from './1763780021500-run-flow';
import { ConnectorCalls1763780022500 } from './1763780022500-connector-calls';
import { BudgetAudit1763780022550 } from './1763780022550-budget-audit';
import { ConnectorVersions1763780022700 } from './1763780022700-connector-versions';
import { NodeEdgesFunction1763780022710 } from './1763780022710-node-edges-function';
import { CallbackFormats1763780022800 } from './1763780022800-callback-formats';
import { RunPriorityGate1763780022900 } from './1763780022900-run-priority-gate';
import { RunsQueuedIndex1763780022950 } from './1763780022950-runs-queued-index';
import { ReserveCreditsFunction1763780023000 } from './1763780023000-reserve-credits-function';
import { NodeWithEdgesFunction1763780023040 } from './1763780023040-node-with-edges-function';

/** Every migration, in order. Later features append theirs here (timestamped names keep the order). */
export const migrations = [
  Foundation1763780000000,
  OntologyConfig1763780001000,
  AuthLookups1763780002000,
  ScopedRead1763780002100,
  Graph1763780003100,
  Search1763780004000,
  Prompt1763780005000,
  Merges1763780006000,
  GraphComponents1763780007100,
  GraphNameSearch1763780007200,
  SearchCovering1763780007300,
  KeyMembership1763780007400,
  PromptSettlement1763780008100,
  DegreeBackfill1763780008200,
  CreditSettlement1763780008400,
  OutboxDeadLetters1763780008410,
  EmbeddingBackfill1763780008420,
  CredentialHardening1763780008500,
  Capabilities1763780008700,
  Agents1763780008710,
  Runs1763780008800,
  WebhookTriggers1763780009000,
  WebhookIntakeWrites1763780009010,
  CodeGraph1763780009200,
  LedgerReads1763780009300,
  WebhookTriggerRevision1763780009450,
  WebhookDeliveryReferences1763780009500,
  OperatorTokens1763780010000,
  CodeIndexBatches1763780010010,
  ApprovalSeparation1763780010100,
  WebhookIntakeLimits1763780010200,
  DefinerGrants1763780010300,
  OutboxDeadLetterCount1763780010400,
  CodeIndexBatchPurge1763780010600,
  WebhookSignatureSchemes1763780010700,
  RunEvents1763780011100,
  RunCallbacks1763780011200,
  RunCallbackRetention1763780011210,
  RunSchedules1763780011300,
  RunControl1763780011400,
  OAuth1763780011600,
  MetricsSnapshot1763780012000,
  KeywordSearch1763780012400,
  Communities1763780012410,
  ApprovalRules1763780012600,
  ApprovalEdits1763780012610,
  ApprovalDeadlinesQuorum1763780013000,
  GraphVersions1763780013100,
  MergeUndo1763780013200,
  ChangeSets1763780014000,
  CredentialLive1763780015000,
  StoredPrincipal1763780015500,
  CommunityForcedRefreshes1763780016100,
  GithubReplayGuard1763780016200,
  CredentialLineage1763780016500,
  ApprovalSubjects1763780017000,
  Waitpoints1763780018000,
  RunChildren1763780018500,
  RunBudgets1763780019000,
  Connectors1763780020000,
  TriggerFilterSuspension1763780021000,
  RunQueueMetrics1763780021100,
  RunPriority1763780021200,
  RunFlow1763780021500,
  ConnectorCalls1763780022500,
  BudgetAudit1763780022550,
  ConnectorVersions1763780022700,
  NodeEdgesFunction1763780022710,
  CallbackFormats1763780022800,
  RunPriorityGate1763780022900,
  RunsQueuedIndex1763780022950,
  ReserveCreditsFunction1763780023000,
  NodeWithEdgesFunction1763780023040,
];
