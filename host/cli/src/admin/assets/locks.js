// The live part of /locks: the table is server-rendered (readable without
// JavaScript); this subscribes to /api/locks/events and re-renders it from
// each event, with the same rows the server renders. Every name and owner
// goes into the page as textContent, never as markup.
(() => {
  "use strict";
  const params = new URLSearchParams(location.search);
  const query = new URLSearchParams();
  for (const key of ["prefix", "token"]) {
    if (params.get(key)) query.set(key, params.get(key));
  }
  const tbody = document.querySelector("#locks tbody");
  const table = document.getElementById("locks");
  const live = document.getElementById("live");
  const cycles = document.getElementById("cycles");

  const duration = (ms) => {
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
    const s = Math.floor(ms / 1000);
    return `${Math.floor(s / 60)} min ${s % 60} s`;
  };

  const cell = (tag, text, cls) => {
    const el = document.createElement(tag);
    el.textContent = text;
    if (cls) el.className = cls;
    return el;
  };

  const row = (lock, role, roleText, owner, mode, position, forMs, token, inCycle) => {
    const tr = document.createElement("tr");
    tr.dataset.role = role;
    tr.dataset.lock = lock;
    if (inCycle) tr.className = "in-cycle";
    const th = cell("th", lock);
    th.scope = "row";
    tr.append(th, cell("td", inCycle ? `${roleText} (in a wait-for cycle)` : roleText, "role"),
      cell("td", owner, "owner"), cell("td", mode, "mode"),
      cell("td", position === null ? "" : String(position), "position"));
    const held = cell("td", forMs === null ? "" : duration(forMs), "for");
    if (forMs !== null) held.dataset.since = String(performance.now() - forMs);
    tr.append(held, cell("td", token === null || token === undefined ? "" : String(token), "token"));
    return tr;
  };

  const render = (view) => {
    const cycled = new Set(view.cycles.flatMap((c) => c.parties));
    const rows = [];
    for (const lock of view.locks) {
      for (const p of lock.holders) {
        rows.push(row(lock.name, "holder", "holds", p.owner, p.mode, p.position, p.for_ms, p.token, cycled.has(p.owner)));
      }
      for (const p of lock.waiters) {
        rows.push(row(lock.name, "waiter", "waits", p.owner, p.mode, p.position, p.for_ms, p.token, cycled.has(p.owner)));
      }
      for (const e of lock.engines || []) {
        if (e.error) {
          rows.push(row(lock.name, "engine", `engine ${e.backend} (${e.kind})`, e.error, "", null, null, null, false));
          continue;
        }
        e.contenders.forEach((c, i) => {
          rows.push(row(lock.name, "engine", `engine ${e.backend}: ${c.holds ? "holds" : "waits"}`, c.owner, c.mode, i + 1, null, c.token, false));
        });
      }
    }
    if (rows.length === 0) {
      const tr = document.createElement("tr");
      const td = cell("td", "No lock is held or awaited by this host's guests.", "empty");
      td.colSpan = 7;
      tr.append(td);
      rows.push(tr);
    }
    tbody.replaceChildren(...rows);
    const banners = view.cycles.map((c) => {
      const p = cell("p", `Wait-for cycle (${c.scope === "host" ? "among this host's guests" : "across hosts"}): ${c.parties.join(" → ")} over ${c.locks.join(", ")}; ${c.broken ? `broken: ${c.broken}` : "not broken"}.`, "cycle");
      p.setAttribute("role", "alert");
      return p;
    });
    cycles.replaceChildren(...banners);
    document.getElementById("count").textContent = String(view.locks.length);
    document.getElementById("version").textContent = String(view.version);
    table.dataset.version = String(view.version);
    live.firstChild.textContent = `Live: table version `;
    live.lastChild.textContent = `, updated ${new Date().toLocaleTimeString()}.`;
  };

  // Status line as three nodes: text, version, text (the noscript goes).
  const version = document.getElementById("version");
  live.replaceChildren(document.createTextNode("Connecting: table version "), version, document.createTextNode(", as served."));

  const source = new EventSource(`/api/locks/events?${query}`);
  source.onmessage = (event) => render(JSON.parse(event.data));
  source.onerror = () => {
    live.lastChild.textContent = ": disconnected, reconnecting…";
  };

  // Held and waiting times grow between events.
  setInterval(() => {
    const now = performance.now();
    for (const td of tbody.querySelectorAll("td.for[data-since]")) {
      td.textContent = duration(now - Number(td.dataset.since));
    }
  }, 1000);
})();
