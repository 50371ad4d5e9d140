export { FolderSink, OutputExistsError, openFolderFile, type FolderFile } from './folder.js';
export {
  claimOutputs,
  LEASE_MS,
  OWNER_FILE,
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
  OpenedFile,
  OutputCheck,
  OutputSink,
  OutputsHolder,
  OutputsOwner,
  Publishing,
  StagedOutput,
  RecordedOutput,
  SinkProblem,
  SinkWriter,
  Snapshotable,
  StateCopies,
  TakenSnapshot,
} from './sink.js';
export { BucketSink, ObjectTakenError } from './bucket/bucket-sink.js';
export { bucketPolicy, bucketProblemText, classify, type PublicationReaction } from './bucket/bucket-policy.js';
export {
  ObjectStoreError,
  type ObjectStore,
  type ObjectSource,
  type StoreCall,
  type StoredObject,
} from './bucket/object-store.js';
export { openOutputSink, stagingDirFor } from './open.js';
export { PatientBucket, type Patience } from './bucket/patient-bucket.js';
export { bucketSecretsIn } from './bucket/secrets.js';
export {
  SNAPSHOT_EVERY_MS,
  SnapshotError,
  SnapshotKeeper,
  StateSnapshots,
} from './bucket/state-snapshots.js';
export { writeWhole } from './write-whole.js';
