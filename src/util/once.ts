/** A release that acts the first time it is called and never again (answers and task ends may both call it). */
export function releaseOnce(release: () => void): () => void {
  let released = false;
  return () => {
    if (released) return;
    released = true;
    release();
  };
}
