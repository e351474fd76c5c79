/**
 * Stable keys of code symbols within a repository, shared by the server and the CLI (pure code):
 * a file is its path, a class `path#Class`, a method `path#Class.method`, a function `path#fn`, a
 * test `path#<its full title>`, a commit its sha.
 */
export const symbolKey = (kind: string, path: string, name: string): string =>
  kind === 'file' ? path : `${path}#${name}`;

export const nodeTypeOf = (kind: string): string => `code.${kind}`;
