/** What an OpenAPI document holds that names its operations. */
export interface OpenApiPaths {
  paths: Record<string, Record<string, unknown>>;
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** The document's operations as schemathesis names them (`GET /api/wallet`), sorted. */
export function operationNames({ paths }: OpenApiPaths): string[] {
  return Object.entries(paths)
    .flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => HTTP_METHODS.has(method))
        .map((method) => `${method.toUpperCase()} ${path}`),
    )
    .sort();
}

/** A name as a regular expression matching it alone (Python's `re` and JavaScript's alike). */
const literally = (name: string): string => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The operations dealt in turn into `parts` shares, each as a pattern matching exactly its
 * names (schemathesis's `--include-name-regex`): one path's methods go to different parts.
 */
export function sharePatterns(names: readonly string[], parts: number): string[] {
  return Array.from({ length: parts }, (_, part) => {
    const share = names.filter((_name, i) => i % parts === part);
    return `^(?:${share.map(literally).join('|')})$`;
  });
}
