/** placeholder */
export async function serveCommand(_argv: string[], _io: unknown): Promise<number> {
  return 2;
}
