// Raw JSON-RPC to corral, for client behaviours no pinned client shows: a stdio child whose every
// line is kept, and one POST to the HTTP endpoint with its answer read from JSON or SSE.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** `corral serve --plugins PLUGINS ARGS...` over stdio with exactly `env`; every line it prints is kept in `lines`. */
export class Stdio {
    constructor(corral, plugins, args, env) {
        this.child = spawn(corral, ['serve', '--plugins', plugins, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
        this.lines = [];
        this.stderr = '';
        this.waiters = [];
        this.child.stderr.on('data', (c) => (this.stderr += c));
        createInterface({ input: this.child.stdout }).on('line', (line) => {
            this.lines.push(JSON.parse(line));
            this.waiters = this.waiters.filter((w) => !w());
        });
    }
    send(message) {
        this.child.stdin.write(JSON.stringify(message) + '\n');
    }
    /** Waits for a message matching `pred` (already received or not); returns it. */
    wait(pred, what, ms = 15_000) {
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms; got:\n${this.lines.map((l) => JSON.stringify(l)).join('\n')}\nstderr:\n${this.stderr}`)), ms);
            const test = () => {
                const found = this.lines.find(pred);
                if (found) {
                    clearTimeout(timer);
                    resolve(found);
                }
                return !!found;
            };
            if (!test()) this.waiters.push(test);
        });
    }
    response(id, what) {
        return this.wait((m) => m.id === id && ('result' in m || 'error' in m), what ?? `response to id ${JSON.stringify(id)}`);
    }
    async close() {
        this.child.stdin.end();
        await new Promise((resolve) => this.child.once('exit', resolve));
    }
}

/** POSTs `body` to `url`; returns the status, the JSON-RPC answer (from JSON or SSE), the session id and the raw body. */
export async function post(url, body, headers = {}, signal = undefined) {
    const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(body),
        signal,
    });
    const type = res.headers.get('content-type') ?? '';
    const raw = await res.text();
    // An SSE answer: the response is the data line that carries an id.
    const json = type.includes('text/event-stream')
        ? raw.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6))).find((m) => 'id' in m)
        : raw
          ? JSON.parse(raw)
          : undefined;
    return { status: res.status, json, session: res.headers.get('mcp-session-id'), raw };
}
