// The few GitHub REST calls the action makes, with fetch (GITHUB_API_URL: github.com's API, or a
// GitHub Enterprise Server's). Each is bounded: a page of 100, at most MAX_PAGES pages.

const MAX_PAGES = 50;

export class GitHub {
  constructor({ apiUrl = process.env.GITHUB_API_URL || 'https://api.github.com', token, repository }) {
    if (!token) throw new Error('no GitHub token: give the action github-token (the default, github.token, needs `pull-requests: write` in the job\'s permissions)');
    if (!/^[^/\s]+\/[^/\s]+$/.test(repository ?? '')) throw new Error(`GITHUB_REPOSITORY must be owner/name (got ${JSON.stringify(repository)})`);
    this.api = apiUrl.replace(/\/+$/, '');
    this.token = token;
    this.repository = repository;
  }

  async request(method, path, body) {
    const res = await fetch(`${this.api}${path}`, {
      method,
      headers: {
        accept: 'application/vnd.github+json',
        authorization: `Bearer ${this.token}`,
        'x-github-api-version': '2022-11-28',
        'user-agent': 'edgeplane-action',
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    if (!res.ok) {
      let message = text.slice(0, 300);
      try { message = JSON.parse(text).message ?? message; } catch { /* not JSON */ }
      const hint = res.status === 403 || res.status === 404 ? ' (does the job have `permissions: pull-requests: write`? a pull request from a fork gets a read-only token)' : '';
      throw new Error(`GitHub ${method} ${path}: ${res.status} ${message}${hint}`);
    }
    return text ? JSON.parse(text) : undefined;
  }

  /** Every comment of an issue or pull request, oldest first (bounded). */
  async comments(issue) {
    const all = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const batch = await this.request('GET', `/repos/${this.repository}/issues/${issue}/comments?per_page=100&page=${page}`);
      all.push(...batch);
      if (batch.length < 100) break;
    }
    return all;
  }

  /**
   * Updates this action's comment on the pull request (the first one by `author` that starts with
   * `marker`), or creates it: re-runs and new pushes replace the plan, never add another. A comment
   * of anyone else that starts with the marker is left alone.
   */
  async upsertComment(issue, marker, body, author = 'github-actions[bot]') {
    const text = body.startsWith(marker) ? body : `${marker}\n${body}`;
    const mine = (await this.comments(issue)).find((c) => c.user?.login === author && typeof c.body === 'string' && c.body.startsWith(marker));
    if (mine) return { action: 'updated', comment: await this.request('PATCH', `/repos/${this.repository}/issues/comments/${mine.id}`, { body: text }) };
    return { action: 'created', comment: await this.request('POST', `/repos/${this.repository}/issues/${issue}/comments`, { body: text }) };
  }

  /** The open issues `author` opened (not pull requests), oldest first (bounded). */
  async openIssues(author) {
    const all = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const batch = await this.request('GET', `/repos/${this.repository}/issues?state=open&creator=${encodeURIComponent(author)}&sort=created&direction=asc&per_page=100&page=${page}`);
      all.push(...batch.filter((i) => !i.pull_request));
      if (batch.length < 100) break;
    }
    return all;
  }

  /**
   * Keeps one issue open while `open` is true: this action's issue (by `author`, its body starting
   * with `marker`) is updated, or one is created; when `open` is false, that issue is closed with
   * `closing` as a comment. Anyone else's issue starting with the marker is left alone.
   */
  async syncIssue({ marker, title, body, open, closing, author = 'github-actions[bot]' }) {
    const mine = (await this.openIssues(author)).find((i) => i.user?.login === author && typeof i.body === 'string' && i.body.startsWith(marker));
    const text = body.startsWith(marker) ? body : `${marker}\n${body}`;
    if (open) {
      if (mine) return { action: 'updated', issue: await this.request('PATCH', `/repos/${this.repository}/issues/${mine.number}`, { title, body: text }) };
      return { action: 'opened', issue: await this.request('POST', `/repos/${this.repository}/issues`, { title, body: text }) };
    }
    if (!mine) return { action: 'none' };
    await this.request('POST', `/repos/${this.repository}/issues/${mine.number}/comments`, { body: closing });
    return { action: 'closed', issue: await this.request('PATCH', `/repos/${this.repository}/issues/${mine.number}`, { state: 'closed', state_reason: 'completed' }) };
  }
}
