/** The path of the h5mem.so this package carries. */
export function getLoadablePath(): string;
/** Loads h5mem into a better-sqlite3 Database or a node:sqlite DatabaseSync
 *  (opened with { allowExtension: true }). */
export function load(db: { loadExtension(path: string, ...rest: unknown[]): unknown }): void;
