// Apart from the client: a command that only describes the URL does not load pg (about 80 ms at start).

export function safeUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/** The URL as it may be shown: host, port and database, never the user's password. */
export function describeCoordinator(url: string): string {
  const u = safeUrl(url);
  return u ? `${u.protocol}//${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}` : '(not a URL)';
}
