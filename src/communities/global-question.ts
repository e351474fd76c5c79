/**
 * Whether a question asks about the graph as a whole ("what are the main groups…", "which
 * communities…", "give me an overview") rather than about some nodes: such a question is answered
 * from the community summaries (src/prompt/retrieval.ts), since no node's neighbourhood holds it.
 */
const GLOBAL = [
  /\b(main|major|biggest|largest|key|principal|top)\s+(groups?|communit(y|ies)|clusters?|themes?|topics?|areas?)\b/i,
  /\b(what|which)\s+(groups|communities|clusters|themes|topics)\b/i,
  /\bcommunit(y|ies)\b/i,
  /\boverview\s+of\s+(the|this|my|our)\s+(graph|workspace|data)\b/i,
];

export const isGlobalQuestion = (question: string) => GLOBAL.some((pattern) => pattern.test(question));
