export { FolderSink, OutputExistsError, openFolderFile, type FolderFile } from './folder.js';
export {
  claimOutputs,
  LEASE_MS,
  parseOwner,
  OutputsHeldError,
  OutputsTakenError,
  OwnerLostError,
  releaseClaim,
  renewClaim,
  type MarkerFile,
} from './owner.js';
export type {
  BucketTrouble,
  ByteRange,
  OutputCheck,
  OutputSink,
  OutputsHolder,
  OutputsOwner,
  Publishing,
  RecordedOutput,
  SinkWriter,
  FilesHere,
} from './sink.js';
export { BucketSink } from './bucket/bucket-sink.js';
export { bucketPolicy, bucketProblemText } from './bucket/bucket-policy.js';
export {
  BucketError,
  type BucketClient,
  type ObjectSource,
  type BucketCall,
  type BucketObject,
} from './bucket/bucket-client.js';
export { openOutputSink, stagingDirFor } from './open.js';
export { PatientBucket, type Patience } from './bucket/patient-bucket.js';
export { bucketSecretsIn } from './bucket/secrets.js';
export { SnapshotKeeper } from './bucket/state-snapshots.js';
export { writeWhole } from './write-whole.js';
