/** The bucket credentials' secret parts in the environment: the log and every message scrub them like the API keys. */
export function bucketSecretsIn(env: NodeJS.ProcessEnv): string[] {
  return [env.AWS_SECRET_ACCESS_KEY, env.AWS_SESSION_TOKEN].filter((v): v is string => Boolean(v?.trim()));
}
