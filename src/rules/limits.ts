/**
 * knowledge-graph-service-api.md §8, in one place. Schemas and services read their bounds from here.
 */
export const LIMITS = {
  // offset: the contract sets only its minimum; the list SQL binds it as int4, so int4's maximum is the bound.
  list: { maxLimit: 10_000, defaultLimit: 50, maxOffset: 2_147_483_647 },
  // Not in the contract: how deeply request JSON (bodies, query, path) may nest; deeper is 422.
  jsonDepth: 64,
  typeahead: { min: 1, max: 50, default: 20 },
  queryLength: 200,
  typeLength: 80,
  // Not in the contract: bounds on free text so a single row cannot grow without limit.
  nodeNameLength: 1000,
  edgeTextLength: 20_000,
  overview: { maxSupernodes: { min: 10, max: 2000, default: 500 } },
  // Components are computed exactly up to this many live edges; beyond it they read as null. A
  // computed result is reused per workspace for componentsTtlSeconds while the live totals stay
  // the same, for at most componentsCacheEntries workspaces per process.
  stats: {
    topHubs: { min: 1, max: 50, default: 5 },
    exactConnectivityMaxEdges: 200_000,
    componentsTtlSeconds: 60,
    componentsCacheEntries: 10_000,
  },
  neighborhood: {
    hops: { min: 1, max: 3, default: 2 },
    nodeLimit: { min: 10, max: 2000, default: 300 },
    edgeLimit: { min: 10, max: 5000, default: 600 },
    candidates: 10,
  },
  familyTree: {
    degrees: { min: 1, max: 5, default: 2 },
    nodeLimit: { min: 10, max: 5000, default: 500 },
    edgeLimit: { min: 10, max: 10_000, default: 1000 },
  },
  unscopedCapabilityRows: 200,
  idempotencyReplayHours: 24,
  // ontology.remember: how many prompt runs one Idempotency-Key may start, each after the last failed
  // with a "not now" refusal (unavailable, rate_limited, timeout); the last such failure then answers.
  rememberAttemptsPerKey: 8,
  // Not in the contract: refused credentials (401) per source address and minute before 429
  // (RATE_LIMIT_AUTH_FAILURES), so probing keys costs the prober, not a lookup each.
  authFailuresPerMinute: 60,
  // Not in the contract: Stripe's bound on an Idempotency-Key (printable ASCII).
  idempotencyKeyChars: 255,
  // Not in the contract: bounds on what agents write, a cap on filtered (scoped) capability lists,
  // and the failure-cluster listing.
  agents: {
    nameChars: 200,
    metadataBytes: 16_384,
    intentChars: 2000,
    errorSignatureChars: 4000,
    finding: { kindChars: 80, titleChars: 500, detailChars: 20_000 },
    scopedRows: 1000,
    clusters: { default: 20, max: 200, recentSessions: 5 },
  },
  mcpMint: { requests: 60, windowSeconds: 60 },
  // MCP tasks (src/mcp/tasks.ts): the poll interval a task suggests, a `tasks/list` page, and how long one
  // `tasks/result` holds its request open for an unfinished task before answering "call again".
  mcpTasks: { pollIntervalMs: 1000, list: 50, resultWaitMs: 5 * 60_000 },
  // Principals the authenticator remembers to start a read before its credential's lookup returns
  // (src/platform/auth/authenticator.ts `recall`). Never an answer on their own: every request's
  // lookup still runs, in the read's statement, so this bounds memory and staleness, not revocation.
  auth: { recalled: { entries: 10_000, seconds: 60 } },
  // OAuth for `/mcp` (src/oauth/): dynamic registration per source address (an hour's registrations, the
  // clients nobody signed in with yet it may hold), how long such a client lives, and the lifetimes of what is issued.
  oauth: {
    registrationsPerSourcePerHour: 20,
    clientsPerSource: 100,
    unusedClientDays: 7,
    codeSeconds: 60,
    accessTokenSeconds: 3600,
    refreshTokenDays: 30,
    redirectUris: 10,
    clientNameChars: 200,
  },
  usageWindowDays: { default: 30, max: 90 },
  // Issue 44 item 6: key-usage counts not yet written (one per credential and day) kept in memory while
  // Postgres is down, at most this many; past it a new credential-day's requests go uncounted (logged).
  usageBufferKeys: 50_000,
  // Contract §8 for the first four. Not in the contract: how long a rotated-out secret still verifies,
  // the filter's length, the delivery list's page, and the retention sweep's rows per transaction.
  webhook: {
    bodyBytes: 2 * 1024 * 1024,
    idempotencyKeyChars: 200,
    timestampSkewSeconds: 300,
    retentionDays: 30,
    rotationGraceHours: 24,
    filterChars: 2000,
    list: { default: 50, max: 200 },
    retentionBatch: 1000,
    /** In-process entries of the intake's trigger cache and of its opened secrets (each an LRU). */
    intakeCacheEntries: 1000,
    // Review H-2: a filter may yield at most `maxFanOut` times its input (checked when saved), and
    // runs in one of `size` worker threads for at most `timeoutMs` in a heap of `heapMb`; at most
    // `queue` evaluations wait for a worker, more end as the `error` outcome at once.
    // Issue 43 item 3 (review NM-8): the workers are shared fairly: each workspace waits in a queue of its
    // own, and a free worker takes the next task of the workspace running fewest (round-robin among
    // equals); one workspace may hold at most `queuePerWorkspace` waiting, and a workspace with nothing
    // waiting is always let in (so the whole `queue` never shuts another workspace out). A trigger whose
    // filter runs out of its budget `suspendAfterTimeouts` times in a row (in one process) is suspended:
    // disabled, with the reason on the trigger, until a PATCH enables it again.
    filter: {
      maxFanOut: 256,
      size: 2,
      timeoutMs: 500,
      heapMb: 128,
      queue: 200,
      queuePerWorkspace: 50,
      suspendAfterTimeouts: 5,
    },
    // Review H-3, M-2: intake requests per source address and per slug, and redeliveries per trigger,
    // in each window of `windowSeconds` (defaults of WEBHOOK_INTAKE_PER_SOURCE, WEBHOOK_INTAKE_PER_SLUG
    // and WEBHOOK_REDELIVERIES_PER_TRIGGER); refusals reach the trigger's counter every `refusalFlushMs`,
    // for at most `refusalSlugs` slugs per flush. An unverified (401) record keeps `unverifiedBodyBytes`.
    intake: {
      windowSeconds: 60,
      perSource: 1200,
      perSlug: 600,
      redeliveriesPerTrigger: 10,
      refusalFlushMs: 1000,
      refusalSlugs: 1000,
      unverifiedBodyBytes: 256,
    },
  },
  auditSummaryChars: 500,
  commonPropertyKeys: 10,
  // Not in the contract beyond default_top_k: bounds on the query text and the type filter list.
  search: { defaultTopK: 20, maxTopK: 100, queryLength: 1000, maxTypeFilters: 50 },
  // Community detection (src/communities/): a pass runs when the graph changed by at least
  // max(minChanges, changeShare × its size at the last pass) nodes and edges added or deleted; a
  // community needs minSize members; each keeps its topMembers most important; at most maxNodes
  // nodes (the most important) enter Louvain, bounding a pass's memory; refreshWaitMs is how long
  // POST /v1/ontology/communities/refresh waits for the pass before answering 504 (it goes on);
  // GET /v1/ontology/communities lists at most listMax. With a hosted model, a pass re-summarises
  // at most summariesPerPass communities whose membership changed (the rest wait for the next
  // pass), each from its summaryMembers most important members (names cut to summaryNameChars);
  // a summary is at most summaryChars. A forced refresh may be asked for once per workspace every
  // forcedCooldownSeconds (review NL-6; 429 with Retry-After within it); its price is in costs.ts.
  communities: {
    minChanges: 20,
    changeShare: 0.05,
    minSize: 3,
    topMembers: 5,
    maxNodes: 200_000,
    refreshWaitMs: 60_000,
    listMax: 200,
    listDefault: 50,
    summariesPerPass: 100,
    summaryMembers: 25,
    summaryNameChars: 200,
    summaryChars: 2000,
    forcedCooldownSeconds: 300,
  },
  // Not in the contract: the merge queue's page size, reviewer notes, how many existing people
  // one resolver pass may propose (a very common name must not flood the queue), and how long a
  // decision waits for a worker to apply it before the API answers 504.
  merges: {
    list: { default: 100, max: 1000 },
    notesChars: 2000,
    matchesPerNode: 50,
    decisionWaitMs: 10_000,
    // Edges created on the survivor after a merge that an unmerge lists for the reviewer (oldest first).
    unmergeEdgesListed: 1000,
  },
  // Not in the contract: payloads per codec-server request (the Temporal UI sends one event's worth).
  temporalCodecPayloads: 1000,
  // Not in the contract: outbox delivery. A failed row waits 5 s, 10 s, 20 s … (at most 10 min) before
  // its next attempt and is dead-lettered after 10 attempts (about half an hour of failures); a row
  // failing because Postgres or Temporal is unavailable waits at most a minute and is never
  // dead-lettered, so it leaves soon after the outage ends (issue 24); delivered rows are purged
  // after 7 days, at most `purgeBatch` rows per statement.
  outbox: {
    batch: 200,
    maxAttempts: 10,
    retryBaseSeconds: 5,
    retryMaxSeconds: 600,
    transientRetryMaxSeconds: 60,
    // Issue 44 item 6: while Temporal is unreachable the relay asks it every `temporalProbeMs` whether it
    // is back; then the rows that failed meanwhile are due at once rather than after their backoff.
    temporalProbeMs: 1000,
    retentionDays: 7,
    purgeBatch: 10_000,
  },
  // Not in the contract: a workspace's embedding queue holds at most `queueMaxPending` requests (more
  // go back to the outbox, to arrive again after `requeueDelaySeconds`); a backfill pass re-queues at
  // most `backfillPerWorkspace` nodes per workspace, visiting `backfillWorkspaces` workspaces per activity.
  embeddings: {
    batchSize: 64,
    queueMaxPending: 5000,
    requeueDelaySeconds: 30,
    backfillPerWorkspace: 1000,
    backfillWorkspaces: 100,
  },
  // Issue 12: a playbook has at most `maxSteps` steps; run and approval lists page by `list`; a run
  // waiting for approval re-reads its approval row every `approvalRecheckSeconds` in case a signal was lost,
  // and continues as new after `approvalRechecksPerRun` re-reads (about 10 history events each).
  runs: {
    maxSteps: 50,
    // Issue 40 item 2: how far below its root a run a step started (`runs.dispatch`) may nest; deeper is 422.
    maxDepth: 5,
    list: { default: 50, max: 200 },
    notesChars: 2000,
    decisionChars: 4000,
    llm: { defaultMaxSteps: 8, maxSteps: 32, goalChars: 4000 },
    // Issue 40 item 4: the most a run's budget may allow (a reviewer's raise too).
    budget: { maxCredits: 1_000_000, maxSteps: 10_000, maxDurationSeconds: 90 * 86_400 },
    approvalRecheckSeconds: 60,
    approvalRechecksPerRun: 200,
    // How long POST /v1/runs waits for the workflow's start before answering 202 anyway (issue 24):
    // the run is committed with its outbox event, which starts it once Temporal answers.
    dispatchStartWaitMs: 2000,
    // Issue 44 item 6: how long a resolve or cancel waits for its wake signal before answering anyway:
    // the decision is committed, and the run's approval re-check (or the reconciler) applies it.
    wakeWaitMs: 1000,
    // Issue 26 part 4: a concurrency key's length, and how many runs with one key may be active at once.
    concurrency: { keyChars: 200, maxLimit: 100 },
    // Issue 43 item 2: `flow.priority`, 1 (first) to 5, default 3, orders a workspace's runs among
    // themselves (src/runs/priority-gate.ts): Weft releases at most `inFlight` of a workspace's runs to
    // Temporal's queue at a time (started but not yet begun) and holds the rest QUEUED, releasing them
    // by priority. 16: a release costs one round of the outbox and a workflow start (tens of ms), so 16
    // keep a workspace's starts flowing at hundreds a second, while a priority-1 run dispatched behind
    // a flood waits behind at most 16 runs in Temporal's queue, not the whole flood.
    priority: { highest: 1, levels: 5, default: 3, inFlight: 16 },
    // Issue 43 item 1 (src/runs/fair-share.ts): a run's share of the task queue against other workspaces'.
    // Up to `freeBacklog` runs of its workspace waiting to start, a run has Temporal's default fairness
    // weight (1); beyond that its weight is freeBacklog ÷ waiting, down to `minWeight`, so a workspace's
    // flood yields to workspaces with little waiting instead of taking turns with them one for one.
    fairShare: { freeBacklog: 16, minWeight: 0.05 },
    // Issue 43 item 2 (src/runs/flow.ts): a flow key's length (a literal key, or an evaluated
    // `key_expression`'s result; the expression itself is bounded like a filter, webhook.filterChars),
    // the most starts or dispatches a throttle or rate limit may allow per period, and the longest
    // period of a throttle, a rate limit or a debounce.
    flow: { keyChars: 200, maxLimit: 10_000, maxPeriodSeconds: 86_400, maxDebounceSeconds: 86_400 },
    // Issue 32: how many rules a workspace's approval rules may hold (their filters: webhook.filterChars);
    // a rule's quorum (`approvers.min`, and how many user ids `from` may list); its deadline's bounds
    // (`after_seconds`, 1 s to 30 days) and how many times an approval may escalate before it expires.
    approvalRules: {
      maxRules: 100,
      approvers: { maxMin: 10, maxFrom: 50 },
      deadline: { minSeconds: 1, maxSeconds: 30 * 24 * 3600, maxEscalations: 5 },
    },
    // Issue 26 part 5: a run's tags (each `[A-Za-z0-9][A-Za-z0-9_.:/=-]*`), and how many `tag` filters a list takes.
    tags: { max: 20, chars: 64 },
    // Issue 26: an event stream sends a keep-alive comment every `keepAliveSeconds` (proxies close
    // idle connections), replays or catches up at most `pageSize` events per read, and a workspace
    // stream remembers how far it has read at most this many runs.
    events: { keepAliveSeconds: 15, pageSize: 500, workspaceRunsTracked: 10_000 },
    // Issue 40 item 5: how many `{"$from": …}` values one playbook step's input may hold (each a JMESPath
    // expression of at most webhook.filterChars, run under the filters' budget), and how long one
    // result may be as JSON; the optional `params` of a playbook dispatch, as JSON, at most `paramsChars`.
    from: { maxPerStep: 50, resultChars: 256 * 1024, paramsChars: 64 * 1024 },
    // Issue 40 item 3: `run.sleep` and `run.wait_for`'s timeout last 1 s to 30 days; a waitpoint's name,
    // its output_schema and a completion's output are bounded; GET /v1/waitpoints pages by `list`.
    waits: {
      maxSeconds: 30 * 24 * 3600,
      nameChars: 200,
      schemaBytes: 16_384,
      outputBytes: 65_536,
      list: { default: 50, max: 200 },
    },
  },
  // Issue 39 (review NM-1): an open event stream (run events, workspace events, prompt streams) re-checks its
  // credential at least every `credentialRecheckSeconds` (and in each read of what it reports), and a resumable
  // one ends after `maxLifetimeSeconds` with a `reconnect` event (the client resumes with Last-Event-ID).
  // STREAM_CREDENTIAL_RECHECK_MS (at most this) and STREAM_MAX_LIFETIME_MS override them.
  // Issue 43 item 3 (review NM-2): at most `perCredential` streams open at once per credential and
  // `perWorkspace` per workspace in one API process (STREAM_MAX_PER_CREDENTIAL, STREAM_MAX_PER_WORKSPACE),
  // 429 beyond, retried after `retryAfterSeconds`; a client that does not read is cut off once
  // `bufferedBytes` wait unread in its stream (STREAM_MAX_BUFFERED_BYTES), never buffered without bound.
  streams: {
    credentialRecheckSeconds: 30,
    maxLifetimeSeconds: 3600,
    perCredential: 32,
    perWorkspace: 128,
    retryAfterSeconds: 5,
    bufferedBytes: 1 << 20,
  },
  // Issue 42 item 3, AG-UI (`POST /v1/ag-ui`): a RunAgentInput's messages, tools and context entries at most;
  // its threadId (a run tag `ag-ui-thread:<threadId>`, so at most a tag's 64 characters with the prefix) and
  // its runId (the run's idempotency key `ag-ui:<runId>`) are bounded so that both fit; `resume`: the
  // interrupts one RunAgentInput answers at most.
  agUi: { messages: 200, tools: 100, context: 100, threadIdChars: 51, runIdChars: 200, resume: 20 },
  // Issue 42 item 2, A2A (`POST /a2a`): a blocking `SendMessage` (without `returnImmediately`) waits at most
  // `blockingWaitSeconds` for its run to finish or ask for input, then answers the task as it is (working).
  // ListTasks' pageSize: A2A 1.0's own bounds (1 to 100, 50 when unset).
  a2a: { blockingWaitSeconds: 30, listTasks: { default: 50, max: 100 } },
  // Issue 26 part 2, signed completion callbacks. A callback URL's length; each POST's timeout and the
  // response bytes read (more is left unread), of which an attempt's record keeps `storedBodyBytes`.
  // A delivery retries after retryBase, 2×, 4× … (at most retryMax; RUN_CALLBACK_RETRY_* override both)
  // for `retryWindowHours` after it was queued or redelivered; then it is `failed`. Settled deliveries
  // are deleted after `retentionDays` by a daily sweep, `retentionBatch` per transaction.
  /** Connectors (issue 41): remote MCP servers and HTTP APIs as workspace tools. */
  connectors: {
    perWorkspace: 50,
    toolsPerConnector: 200,
    urlChars: 2048,
    openapiBytes: 1024 * 1024,
    secretChars: 4096,
    timeoutSeconds: { default: 30, max: 300 },
    maxResponseBytes: { default: 1024 * 1024, max: 16 * 1024 * 1024 },
    creditsPerCall: { default: 1, max: 100 },
    /** The wire name `<connector>_<tool>` travels to model clients: at most this long. */
    wireNameChars: 64,
    /** Discovery (tools/list, an OAuth token) at create and refresh. */
    discoveryTimeoutMs: 15_000,
    descriptionChars: 1024,
  },
  runCallbacks: {
    urlChars: 2048,
    timeoutMs: 10_000,
    responseBodyBytes: 64 * 1024,
    storedBodyBytes: 4 * 1024,
    retryBaseSeconds: 30,
    retryMaxSeconds: 3600,
    retryWindowHours: 24,
    list: { default: 50, max: 200 },
    descriptionChars: 500,
    retentionDays: 30,
    retentionBatch: 1000,
  },
  // Issue 26 part 3, run schedules: how many a workspace keeps; the shortest interval; how many next
  // fire times a read shows; the note's length. A schedule's action waits for its run in long polls of
  // `runWaitSeconds` (then reads the row again), continuing as new after `waitsPerAction` of them.
  // A creator's `create`/`delete` waits at most `temporalWaitMs` for Temporal (the outbox finishes it).
  // Issue 43 item 3 (review NM-7): an interval, or the shortest gap a cron allows, is at least
  // `minIntervalSeconds` (the default of SCHEDULE_MIN_INTERVAL_SECONDS; shorter is 422; never below
  // `floorIntervalSeconds`), and a workspace's schedules dispatch at most `firesPerHour` runs in any
  // hour (SCHEDULE_FIRES_PER_HOUR): a fire beyond is skipped and recorded as the schedule's last refusal.
  schedules: {
    perWorkspace: 100,
    minIntervalSeconds: 60,
    floorIntervalSeconds: 1,
    firesPerHour: 600,
    maxIntervalSeconds: 366 * 24 * 3600,
    nextFireTimes: 5,
    noteChars: 500,
    cronChars: 200,
    runWaitSeconds: 30,
    waitsPerAction: 500,
    temporalWaitMs: 5000,
  },
  // Issue 16: `GET /v1/billing/ledger` pages by this.
  ledger: { list: { default: 50, max: 200 } },
  // Issue 31 part 4: staged change-sets are listed newest first, a page at a time.
  changeSets: { list: { default: 50, max: 200 } },
  // Issue 15, the code graph. An ingest batch stays well under the 1 MiB JSON body limit and
  // Temporal's payload limit (the batch is the workflow's input): the CLI splits by count and size.
  code: {
    batch: { symbols: 500, edges: 2000, commits: 200, filesPerCommit: 300 },
    // A final batch's coverage: the pass's include prefixes and the paths it skipped (review M-8).
    coverage: { includePrefixes: 50, skippedPaths: 1000 },
    repoChars: 100,
    nameChars: 300,
    pathChars: 500,
    signatureChars: 500,
    docChars: 1000,
    commitMessageChars: 1000,
    authorChars: 200,
    // symbol-context: each list of the answer (contract: "a cap on each result list").
    contextList: { default: 20, max: 100 },
    // A symbol-context page cursor: base64url of a (name, id) pair, a name up to nodeNameLength
    // characters of up to 4 UTF-8 bytes each.
    contextCursorChars: 6000,
    // How long POST /v1/code/ingest waits for its batch's workflow before answering 504 (it runs on).
    applyWaitMs: 60_000,
    // Stored ingest batches (code_index_batches) older than this are deleted by the hourly key purge;
    // the window lives in weft_purge_code_index_batches (migration 1763780010600), this says it.
    batchRetentionHours: 24,
    // Stored batches deleted per transaction by that purge (src/code/batch-purge.ts).
    batchPurgeRows: 1000,
  },
  worker: {
    // Issue 44 item 6: a worker asks Temporal this often (through its client, whose reconnect backoff is
    // capped) whether it answers; when it answers again after at least `replaceAfterOutageMs` without,
    // the worker is replaced rather than left to the SDK core's poll retry (up to 10 s ± 20 %).
    temporalProbeMs: 1000,
    replaceAfterOutageMs: 5000,
  },
  standby: {
    // Issue 44 item 4: after a read failed on the standby (down, a recovery conflict), the standby is left
    // alone this long, so a dead standby does not cost every read a failed attempt before the primary.
    restAfterFailureMs: 5000,
  },
  metrics: {
    // GET /metrics's cross-workspace figures (runs, approvals, outbox, deliveries, credits) are read
    // at most this often; scrapes in between reuse the last answer (src/metrics/snapshot.ts).
    snapshotCacheMs: 10_000,
    // The snapshot's statement gets this long (statement_timeout), so a slow scrape cannot hold a
    // connection; past it the last good answer is served and weft_metrics_snapshot_failures_total counts.
    snapshotBudgetMs: 2_000,
    // A worker's /metrics waits this long for the Temporal SDK's exporter before answering without it.
    sdkScrapeTimeoutMs: 2_000,
  },
} as const;
