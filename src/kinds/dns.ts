/**
 * DNS names as edges serve them: at least two labels, each 1–63 letters, digits or hyphens, not
 * starting or ending with a hyphen, at most 253 characters, a top-level label that is not all
 * digits (so IP addresses are not names). A leading `*.` wildcard only where allowed.
 */
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function dnsNameProblem(name: string, opts: { wildcard?: boolean } = {}): string | null {
  let rest = name;
  if (rest.startsWith('*.')) {
    if (!opts.wildcard) return 'a wildcard (*.) is not allowed here';
    rest = rest.slice(2);
  }
  // The whole name, a wildcard's `*.` too: it is a label of the name.
  if (rest.length === 0 || name.length > 253) return 'a DNS name is 1 to 253 characters';
  const labels = rest.split('.');
  if (labels.length < 2) return 'must be a fully qualified DNS name (at least two labels, like example.com)';
  const bad = labels.find((l) => !LABEL.test(l));
  if (bad !== undefined) {
    return bad === ''
      ? 'has an empty label (two dots in a row, or a leading or trailing dot)'
      : `label ${JSON.stringify(bad)} must be 1 to 63 letters, digits or hyphens, not starting or ending with a hyphen`;
  }
  if (/^[0-9]+$/.test(labels.at(-1)!)) return 'must be a DNS name, not an IP address';
  return null;
}
