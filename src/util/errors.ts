/**
 * The root of genbatch's own errors. Each keeps what caused it (`cause`, as
 * `new Error(message, { cause })` does), so a wrapped file system or network
 * error is still there for the log, and each says its class as its name.
 */
export class GenbatchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}
