'use strict';
// cuckood's cluster mode through node-redis `createCluster` with the `@redis/bloom` commands
// (`cluster.cf.*`; the `redis` package adds its modules to clusters as to clients), in RESP2
// and RESP3: a small CF workload over ~100 keys, hash tags included, routed by the client.
// Run by scripts/compat.sh node, which starts 3 cluster-enabled nodes, pushes their topology
// and names them in CUCKOOD_CLUSTER_NODES ("host:port,host:port,host:port").
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { createClient, createCluster, ErrorReply } = require('redis');

const NODES = (process.env.CUCKOOD_CLUSTER_NODES || '').split(',').filter(Boolean).map((a) => {
  const [host, port] = a.split(':');
  return { host, port: Number(port) };
});
assert.equal(NODES.length, 3, 'CUCKOOD_CLUSTER_NODES must name the cluster started by scripts/compat.sh');

for (const RESP of [2, 3]) {
  describe(`node-redis createCluster RESP${RESP}`, () => {
    let cluster;
    const direct = [];
    const keys = [];
    for (let i = 0; i < 80; i++) keys.push(`nodecl:${RESP}:${i}`);
    for (let i = 0; i < 20; i++) keys.push(`{nodecl${RESP}}:${i}`);

    before(async () => {
      cluster = createCluster({ rootNodes: NODES.map((socket) => ({ socket })), RESP });
      cluster.on('error', () => {});
      await cluster.connect();
      for (const socket of NODES) {
        const c = createClient({ socket });
        c.on('error', () => {});
        await c.connect();
        direct.push({ addr: `${socket.host}:${socket.port}`, c });
      }
    });

    after(async () => {
      await cluster.close();
      for (const { c } of direct) await c.close();
    });

    test('cf.reserve, cf.add, cf.insert, cf.exists, cf.info over the slots', async () => {
      assert.equal(typeof cluster.cf.add, 'function');
      assert.equal(await cluster.cf.reserve(keys[0], 1000), 'OK');
      for (const [i, k] of keys.entries()) {
        assert.equal(await cluster.cf.add(k, `item-${i}`), true, k);
      }
      assert.deepEqual(await cluster.cf.insert(keys[80], ['x', 'y']), [true, true]);
      for (const [i, k] of keys.entries()) {
        assert.equal(await cluster.cf.exists(k, `item-${i}`), true, k);
      }
      assert.equal(await cluster.cf.exists(keys[1], 'absent'), false);
      const info = await cluster.cf.info(keys[80]);
      assert.equal(info['Number of items inserted'], 3);
      assert.deepEqual(await cluster.cf.info(keys[0]), {
        'Size': 1080, 'Number of buckets': 512, 'Number of filters': 1,
        'Number of items inserted': 1, 'Number of items deleted': 0, 'Bucket size': 2,
        'Expansion rate': 1, 'Max iterations': 20,
      });
      // The hash-tagged keys in one MULTI on their node.
      const tx = cluster.multi();
      for (let i = 81; i < 100; i++) tx.cf.add(keys[i], 'multi');
      assert.deepEqual(await tx.exec(), new Array(19).fill(true));
    });

    test('every key is on the master of its slot, the others redirect', async () => {
      const owner = new Map();
      const slots = await direct[0].c.sendCommand(['CLUSTER', 'SLOTS']);
      for (const [start, end, [host, port]] of slots) {
        for (let s = start; s <= end; s++) owner.set(s, `${host}:${port}`);
      }
      assert.equal(owner.size, 16384);
      const used = new Set();
      for (const k of keys) {
        const home = owner.get(await direct[0].c.sendCommand(['CLUSTER', 'KEYSLOT', k]));
        used.add(home);
        for (const { addr, c } of direct) {
          if (addr === home) {
            assert.equal(await c.exists(k), 1, k);
          } else {
            await assert.rejects(c.exists(k), (err) => {
              assert.ok(err instanceof ErrorReply);
              assert.match(err.message, /^MOVED \d+ /);
              return true;
            });
          }
        }
      }
      assert.equal(used.size, 3);
    });
  });
}
