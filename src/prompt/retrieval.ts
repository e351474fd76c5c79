import type { Retriever } from './service';

/**
 * PLACEHOLDER until search lands: nodes whose name shares a word with the question, by importance.
 */
export const retrieveByName: Retriever = async (m, question, topK) => {
  const words = [...new Set(question.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? [])].slice(0, 20);
  if (words.length === 0) return [];
  const rows = await m.query(
    `SELECT id, type, name, properties, importance_score AS score FROM nodes
     WHERE NOT is_deleted AND lower(name) ~ ANY($1::text[]) ORDER BY importance_score DESC, created_at DESC LIMIT $2`,
    [words.map((word) => `\\m${word}\\M`), topK],
  );
  return rows;
};
