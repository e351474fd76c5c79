import { LIMITS } from '../rules/limits';

/**
 * Issue 43 item 1: a new run's fairness weight in Temporal's task queue, from how many of its workspace's
 * runs were waiting to start (QUEUED) when it was dispatched. Temporal hands a backlogged queue's tasks to
 * workers in turn between fairness keys (the workspace id), in proportion to their weights; at equal
 * weights a workspace with 500 runs waiting still takes every other turn from one that dispatches five,
 * and those five wait twice as long as on an idle queue. Weighing the flood down lets the workspace with
 * little waiting go first, while the flood keeps every turn nobody else wants (a weight only orders turns).
 * Undefined: Temporal's default weight, 1.
 */
export function backlogWeight(waiting: number): number | undefined {
  const { freeBacklog, minWeight } = LIMITS.runs.fairShare;
  if (waiting <= freeBacklog) return undefined;
  return Math.max(minWeight, Math.round((freeBacklog / waiting) * 1000) / 1000);
}

/**
 * The most waiting runs that still change a weight: beyond freeBacklog ÷ minWeight every run weighs
 * minWeight, so a dispatch counts its workspace's backlog only this far (a flood of 10,000 costs what
 * one of 320 does).
 */
export const BACKLOG_COUNTED = Math.ceil(LIMITS.runs.fairShare.freeBacklog / LIMITS.runs.fairShare.minWeight);
