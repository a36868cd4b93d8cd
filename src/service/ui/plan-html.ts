import MarkdownIt from 'markdown-it';
import sanitizeHtml from 'sanitize-html';

/**
 * A run's stored plan (the Markdown of its pull-request comment) as HTML for the page. The
 * Markdown holds a little HTML of its own (`<br>` in table cells, `<details>` around long
 * lists), so markdown-it passes HTML through and sanitize-html then keeps only the tags and
 * attributes such a comment uses: whatever a value in the plan holds, no script, handler, style or
 * foreign URL reaches the page.
 */
const md = new MarkdownIt({ html: true, linkify: false, typographer: false });

const ALERTS: Record<string, string> = { NOTE: 'info', TIP: 'info', IMPORTANT: 'warn', WARNING: 'warn', CAUTION: 'bad' };

function alignClass(tagName: string, attribs: sanitizeHtml.Attributes): sanitizeHtml.Tag {
  const m = /text-align:\s*(left|right|center)/.exec(attribs.style ?? '');
  return { tagName, attribs: m ? { class: `align-${m[1]}` } : {} };
}

export function planHtml(markdown: string): string {
  const raw = md.render(markdown);
  const clean = sanitizeHtml(raw, {
    allowedTags: ['h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'p', 'br', 'hr', 'strong', 'em', 'code', 'pre', 'blockquote', 'ul', 'ol', 'li',
      'table', 'thead', 'tbody', 'tr', 'th', 'td', 'details', 'summary', 'del', 'sub', 'sup'],
    allowedAttributes: { th: ['class'], td: ['class'], ol: ['start'] },
    allowedClasses: { th: ['align-left', 'align-right', 'align-center'], td: ['align-left', 'align-right', 'align-center'] },
    // markdown-it aligns table columns with `style="text-align:…"`, which the page's CSP (no
    // inline style) would block: a class instead.
    transformTags: { th: alignClass, td: alignClass },
    allowedSchemes: [],
    disallowedTagsMode: 'escape',
  });
  // GitHub's alert blocks (`> [!WARNING]`) as a class the style sheet colours. A value that
  // merely contains the text is inside a table cell or code span, never the start of a quote.
  return clean.replace(/<blockquote>\n<p>\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\n?/g, (_m, kind: string) => `<blockquote class="alert alert-${ALERTS[kind]}">\n<p><strong class="alert-title">${kind.charAt(0)}${kind.slice(1).toLowerCase()}</strong><br>`);
}
