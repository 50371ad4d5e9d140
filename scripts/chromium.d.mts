export declare const CHROMIUM_ARGS: string[];
export declare function installedChromium(): Promise<{ executablePath: string; env: Record<string, string> }>;
export declare function chromiumLaunchOptions(): Promise<{
  executablePath: string;
  env: Record<string, string | undefined>;
  args: string[];
}>;
