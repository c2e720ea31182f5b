// Run in a scratch project that installed relock, one Redis client and one framework (argv[2]: { url,
// framework, name }): an app of that framework on loopback, with relock's integration from the packed
// tarball, answers one request holding a fenced lock; prints a JSON line with what it saw.
import { createRequire } from 'node:module';

const { url, framework, name } = JSON.parse(process.argv[2]);
const require = createRequire(import.meta.url);

/** POSTs to `base + path` and resolves to the status and JSON body. */
async function post(base, path) {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { connection: 'close' } });
  return { status: res.status, body: await res.json() };
}

const apps = {
  async express() {
    const { default: express } = await import('express');
    const { createLockClient } = await import('relock');
    const { attachLocks, lockContext, shutdownOnClose, withLock } = await import('relock/express');
    const app = express();
    const locks = attachLocks(app, createLockClient({ url }));
    app.use(lockContext());
    app.post('/x/:id', withLock(`${name}:{{params.id}}`, (req, res, held) => void res.json({ token: String(held.token) }), { kind: 'fenced' }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const closed = shutdownOnClose(server, locks);
    const answer = await post(`http://127.0.0.1:${server.address().port}`, '/x/1');
    server.close();
    await closed;
    return answer;
  },
  async fastify() {
    const { default: Fastify } = await import('fastify');
    const { relockPlugin, withLock } = await import('relock/fastify');
    const app = Fastify();
    await app.register(relockPlugin, { url });
    app.post('/x/:id', withLock(`${name}:{{params.id}}`, (req, reply, held) => ({ token: String(held.token) }), { kind: 'fenced' }));
    const answer = await post(await app.listen({ port: 0, host: '127.0.0.1' }), '/x/1');
    await app.close();
    return answer;
  },
  async nestjs() {
    const { Controller, Module, Post } = await import('@nestjs/common');
    const { NestFactory } = await import('@nestjs/core');
    const { currentLock, RelockModule, WithLock } = await import('relock/nestjs');
    class Orders {
      async pay() {
        return { token: String(currentLock().token) };
      }
    }
    // TypeScript's legacy decorator emit, by hand (plain JavaScript has no decorator syntax).
    const proto = Orders.prototype;
    let descriptor = Object.getOwnPropertyDescriptor(proto, 'pay');
    for (const decorate of [WithLock(`${name}:1`, { kind: 'fenced' }), Post('x')]) descriptor = decorate(proto, 'pay', descriptor) ?? descriptor;
    Object.defineProperty(proto, 'pay', descriptor);
    Controller()(Orders);
    class AppModule {}
    Module({ imports: [RelockModule.forRoot({ url })], controllers: [Orders] })(AppModule);
    const app = await NestFactory.create(AppModule, { logger: false });
    await app.listen(0, '127.0.0.1');
    const answer = await post(`http://127.0.0.1:${app.getHttpServer().address().port}`, '/x');
    await app.close();
    return answer;
  },
};

const answer = await apps[framework]();
// The CommonJS build of the subpath loads too (require(esm) of the framework where it is ESM-only).
const required = Object.keys(require(`relock/${framework}`)).sort();
console.log(JSON.stringify({ answer, resolved: import.meta.resolve(`relock/${framework}`), required }));
