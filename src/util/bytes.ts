export function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}
