/** Every stored vector has this many dimensions (knowledge-graph-service-api.md §2.1; the column is vector(512)). */
export const EMBEDDING_DIMENSIONS = 512;

/** Turns texts into unit-length vectors of EMBEDDING_DIMENSIONS floats, in input order. */
export interface EmbeddingProvider {
  readonly name: string;
  embed(texts: string[]): Promise<number[][]>;
}
