export {
  checkManifest,
  loadManifest,
  loadManifestTop,
  type LoadedManifest,
  type ManifestTop,
} from './validate.js';
export { formatIssue, IssueList, type ManifestIssue } from './issues.js';
export {
  dependenciesOf,
  fileInputsOf,
  gatesOf,
  type WebCopySpec,
  type CopyPlan,
  type OutputChecks,
  type InputRef,
  type ItemSpec,
  type ResolvedItem,
} from './types.js';
export { ItemsTally } from './shapes.js';
export {
  outputRelativePath,
  outDirProblem,
  webCopyPath,
  bucketLocationOf,
  resolveOutDir,
  type BucketLocation,
  resolveInside,
  defaultExtension,
  DEFAULT_OUTPUT_NAME,
} from './output-paths.js';
export type { Manifest } from './schema.js';
export { runBudget } from './budget.js';
