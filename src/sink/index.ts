export { FolderSink, OutputExistsError, openFolderFile, type FolderFile } from './folder.js';
export { OWNER_FILE, OutputsTakenError } from './owner.js';
export type {
  ByteRange,
  OpenedFile,
  OutputCheck,
  OutputSink,
  OutputsOwner,
  RecordedOutput,
  SinkProblem,
  SinkWriter,
} from './sink.js';
