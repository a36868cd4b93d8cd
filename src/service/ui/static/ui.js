// The status page's only script (served from /ui/static/, no inline script: the page's CSP
// forbids it). Parts marked `data-refresh="URL"` are fetched again every `data-interval` seconds
// (the server renders the same part as HTML, escaped) and replaced in place, without a reload;
// nothing is fetched while the tab is hidden. Everything else on the page works without it.

const parts = document.querySelectorAll('[data-refresh]');

async function refresh(el) {
  if (document.hidden) return;
  try {
    const res = await fetch(el.dataset.refresh, { headers: { accept: 'text/html', 'x-edgeplane-fragment': '1' }, credentials: 'same-origin', cache: 'no-store' });
    if (res.status === 401) {
      window.location.assign('/ui/login');
      return;
    }
    if (!res.ok) return;
    const html = await res.text();
    if (html !== el.dataset.last) {
      el.innerHTML = html;
      el.dataset.last = html;
    }
    el.dataset.refreshedAt = new Date().toISOString();
  } catch {
    // The service is restarting or the network blinked: the next tick tries again.
  }
}

for (const el of parts) {
  const seconds = Math.max(1, Number(el.dataset.interval) || 5);
  setInterval(() => refresh(el), seconds * 1000);
}
document.addEventListener('visibilitychange', () => {
  if (!document.hidden) for (const el of parts) refresh(el);
});
