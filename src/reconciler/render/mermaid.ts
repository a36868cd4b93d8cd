import { visible } from './values.js';

/**
 * Text for a quoted Mermaid label (`s1["…"]`): one line, invisible characters shown as escapes, and
 * the characters Mermaid or the Markdown around it could read — the quote that ends the label,
 * HTML, entities, the backtick of a fence or a Markdown string — written as Mermaid entity codes
 * (`#35;`), which Mermaid shows as the characters themselves.
 */
export function mermaidText(s: string): string {
  return visible(s).replace(/["#&<>`]/g, (c) => `#${c.charCodeAt(0)};`);
}
