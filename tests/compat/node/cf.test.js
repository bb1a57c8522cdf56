'use strict';
// cuckood through node-redis (`redis`) and its `@redis/bloom` `client.cf.*` commands, in RESP2
// and RESP3. Run by scripts/compat.sh node, which starts the server and sets CUCKOOD_PORT.
// Expected values are RedisBloom 2.8's (/work/shared/redisbloom-cf-reference.md).
//
// node-redis maps RedisBloom's yes/no replies to JS booleans in both protocols (1/0 in RESP2,
// #t/#f in RESP3), so the wire types are checked with raw sendCommand() calls. It has no
// cf.compact / cf.debug: those go through sendCommand as well. Its error messages keep the
// server's text verbatim, "ERR " prefix included.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { createClient, createClientPool, RESP_TYPES, ErrorReply } = require('redis');

const HOST = process.env.CUCKOOD_HOST || '127.0.0.1';
const PORT = Number(process.env.CUCKOOD_PORT);
const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';

const INFO_NAMES = ['Size', 'Number of buckets', 'Number of filters', 'Number of items inserted',
  'Number of items deleted', 'Bucket size', 'Expansion rate', 'Max iterations'];

function info(values) {
  return Object.fromEntries(INFO_NAMES.map((n, i) => [n, values[i]]));
}

async function rejectsWith(promise, message) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof ErrorReply, `expected an ErrorReply, got ${err && err.constructor.name}`);
    assert.equal(err.message, message);
    return true;
  });
}

async function dump(client, key) {
  const chunks = [];
  let iterator = 0;
  for (;;) {
    const reply = await client.cf.scanDump(key, iterator);
    assert.equal(typeof reply.iterator, 'number');
    iterator = reply.iterator;
    if (iterator === 0) {
      assert.equal(reply.chunk, null);
      return chunks;
    }
    assert.ok(Buffer.isBuffer(reply.chunk));
    chunks.push({ iterator, chunk: reply.chunk });
  }
}

assert.ok(PORT > 0, 'CUCKOOD_PORT must name the server started by scripts/compat.sh');

for (const RESP of [2, 3]) {
  describe(`node-redis RESP${RESP}`, () => {
    let client;
    let n = 0;
    const key = (name) => `node:${RESP}:${name}`;
    const dbg = (k) => client.sendCommand(['CF.DEBUG', k]);

    before(async () => {
      client = createClient({ socket: { host: HOST, port: PORT }, RESP });
      client.on('error', () => {});
      await client.connect();
      if (RESP === 2) await client.flushAll();
    });
    after(async () => {
      await client.close();
    });

    test('hello reports the protocol', async () => {
      const hello = await client.sendCommand(['HELLO', String(RESP)]);
      const proto = RESP === 3 ? hello.proto : hello[hello.indexOf('proto') + 1];
      assert.equal(proto, RESP);
    });

    test('cf.reserve with defaults and every option', async () => {
      assert.equal(await client.cf.reserve(key('r1'), 1000), 'OK');
      assert.deepEqual(await client.cf.info(key('r1')), info([1080, 512, 1, 0, 0, 2, 1, 20]));
      assert.equal(await client.cf.reserve(key('r2'), 1000,
        { BUCKETSIZE: 4, MAXITERATIONS: 50, EXPANSION: 3 }), 'OK');
      assert.deepEqual(await client.cf.info(key('r2')), info([1080, 256, 1, 0, 0, 4, 4, 50]));
      assert.equal(await client.cf.reserve(key('r3'), 10, { BUCKETSIZE: 1, EXPANSION: 0 }), 'OK');
      assert.equal(await dbg(key('r3')),
        'bktsize:1 buckets:16 items:0 deletes:0 filters:1 max_iterations:20 expansion:0');
      assert.equal(await client.type(key('r1')), 'MBbloomCF');
    });

    test('cf.reserve errors', async () => {
      await client.cf.reserve(key('re'), 100);
      await rejectsWith(client.cf.reserve(key('re'), 100), 'ERR item exists');
      await rejectsWith(client.cf.reserve(key('re2'), 1), 'Capacity must be at least (BucketSize * 2)');
      await rejectsWith(client.cf.reserve(key('re2'), 100, { BUCKETSIZE: 0 }),
        'BUCKETSIZE: value must be an integer between 1 and 255, inclusive.');
      await rejectsWith(client.cf.reserve(key('re2'), 100, { MAXITERATIONS: 65536 }),
        'MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.');
      await rejectsWith(client.cf.reserve(key('re2'), 100, { EXPANSION: 32769 }),
        'EXPANSION: value must be an integer between 0 and 32768, inclusive.');
      await rejectsWith(client.cf.reserve(key('re2'), 'many'), 'Bad capacity');
      await client.set(key('str'), 'x');
      await rejectsWith(client.cf.reserve(key('str'), 100), WRONGTYPE);
      assert.equal(await client.exists(key('re2')), 0);
    });

    test('cf.add and cf.addNX', async () => {
      const k = key('add');
      assert.equal(await client.cf.add(k, 'a'), true); // auto-created with the defaults
      assert.equal(await client.cf.add(k, 'a'), true); // another copy
      assert.equal(await client.cf.count(k, 'a'), 2);
      assert.equal(await client.cf.addNX(k, 'a'), false);
      assert.equal(await client.cf.addNX(k, 'b'), true);
      assert.equal(await client.cf.addNX(k, Buffer.from([0, 0xff, 13, 10])), true);
      assert.equal(await client.cf.exists(k, Buffer.from([0, 0xff, 13, 10])), true);
      assert.deepEqual(await client.cf.info(k), info([1080, 512, 1, 4, 0, 2, 1, 20]));
      await client.set(key('addstr'), 'x');
      await rejectsWith(client.cf.add(key('addstr'), 'a'), WRONGTYPE);
      // wire types: integers in RESP2, booleans in RESP3
      assert.equal(await client.sendCommand(['CF.ADD', k, 'c']), RESP === 3 ? true : 1);
      assert.equal(await client.sendCommand(['CF.ADDNX', k, 'c']), RESP === 3 ? false : 0);
    });

    test('cf.add on a full filter and past the sub-filter limit', async () => {
      await client.cf.reserve(key('full'), 4, { EXPANSION: 0 });
      for (const item of ['1', '2', '3', '4']) assert.equal(await client.cf.add(key('full'), item), true);
      await rejectsWith(client.cf.add(key('full'), '5'), 'Filter is full');
      await client.cf.reserve(key('max'), 4);
      const replies = await Promise.all(
        Array.from({ length: 124 }, (_, i) => client.cf.add(key('max'), String(i))));
      assert.deepEqual(replies, Array(124).fill(true));
      assert.equal((await client.cf.info(key('max')))['Number of filters'], 32);
      await rejectsWith(client.cf.add(key('max'), '2048'), 'Maximum expansions reached');
      await rejectsWith(client.cf.addNX(key('max'), '0'), 'Maximum expansions reached');
    });

    test('cf.insert with CAPACITY and NOCREATE', async () => {
      assert.deepEqual(await client.cf.insert(key('ins'), ['x', 'y', 'z']), [true, true, true]);
      assert.equal(await dbg(key('ins')),
        'bktsize:2 buckets:512 items:3 deletes:0 filters:1 max_iterations:20 expansion:1');
      assert.deepEqual(await client.cf.insert(key('ins2'), ['x'], { CAPACITY: 10000 }), [true]);
      assert.equal(await dbg(key('ins2')),
        'bktsize:2 buckets:8192 items:1 deletes:0 filters:1 max_iterations:20 expansion:1');
      assert.deepEqual(await client.cf.insert(key('ins2'), ['w'], { NOCREATE: true, CAPACITY: 10 }), [true]);
      await rejectsWith(client.cf.insert(key('insmissing'), ['x'], { NOCREATE: true }), 'ERR not found');
      assert.equal(await client.exists(key('insmissing')), 0);
      await rejectsWith(client.cf.insert(key('ins3'), ['x'], { CAPACITY: 3 }),
        'Capacity must be at least (BucketSize * 2)');
      // a full filter: 1 / -1 in RESP2 (false for the client), true / false in RESP3
      await client.cf.reserve(key('insfull'), 2, { BUCKETSIZE: 1, EXPANSION: 0 });
      assert.deepEqual(await client.cf.insert(key('insfull'), ['1', '1', '1', '1']),
        [true, true, false, false]);
      assert.deepEqual(await client.sendCommand(['CF.INSERT', key('insfull'), 'ITEMS', '1']),
        [RESP === 3 ? false : -1]);
    });

    test('cf.insertNX replies integers in both protocols', async () => {
      assert.deepEqual(await client.cf.insertNX(key('nx'), ['a', 'b', 'a']), [1, 1, 0]);
      assert.deepEqual(await client.cf.insertNX(key('nx'), ['b', 'c']), [0, 1]);
      assert.deepEqual(await client.cf.insertNX(key('nx2'), ['a'], { CAPACITY: 100 }), [1]);
      assert.equal(await dbg(key('nx2')),
        'bktsize:2 buckets:64 items:1 deletes:0 filters:1 max_iterations:20 expansion:1');
      await rejectsWith(client.cf.insertNX(key('nxmissing'), ['a'], { NOCREATE: true }), 'ERR not found');
      await client.cf.reserve(key('nxfull'), 2, { BUCKETSIZE: 1, EXPANSION: 0 });
      await client.cf.insert(key('nxfull'), ['1', '1']);
      assert.deepEqual(await client.cf.insertNX(key('nxfull'), ['1', '2']), [0, -1]);
    });

    test('cf.exists and cf.mExists', async () => {
      const k = key('ex');
      await client.cf.insert(k, ['a', 'b']);
      assert.equal(await client.cf.exists(k, 'a'), true);
      assert.equal(await client.cf.exists(k, 'nope'), false);
      assert.deepEqual(await client.cf.mExists(k, ['a', 'nope', 'b']), [true, false, true]);
      assert.equal(await client.cf.exists(key('exmissing'), 'a'), false);
      assert.deepEqual(await client.cf.mExists(key('exmissing'), ['a', 'b']), [false, false]);
      await client.set(key('exstr'), 'x'); // another type answers "no", not WRONGTYPE
      assert.equal(await client.cf.exists(key('exstr'), 'a'), false);
      assert.deepEqual(await client.sendCommand(['CF.MEXISTS', k, 'a', 'nope']),
        RESP === 3 ? [true, false] : [1, 0]);
    });

    test('cf.count', async () => {
      const k = key('count');
      for (let i = 0; i < 3; i++) await client.cf.add(k, 'x');
      assert.equal(await client.cf.count(k, 'x'), 3);
      assert.equal(await client.cf.count(k, 'y'), 0);
      assert.equal(await client.cf.count(key('countmissing'), 'x'), 0);
      await client.cf.reserve(key('tiny'), 4); // one bucket pair that is the same bucket
      await client.cf.add(key('tiny'), 'a');
      assert.equal(await client.cf.count(key('tiny'), 'a'), 2);
    });

    test('cf.del', async () => {
      const k = key('del');
      await client.cf.add(k, 'a');
      await client.cf.add(k, 'a');
      assert.equal(await client.cf.del(k, 'a'), true);
      assert.equal(await client.cf.count(k, 'a'), 1);
      assert.equal(await client.cf.del(k, 'a'), true);
      assert.equal(await client.cf.del(k, 'a'), false);
      const i = await client.cf.info(k);
      assert.deepEqual([i['Number of items inserted'], i['Number of items deleted']], [0, 2]);
      await rejectsWith(client.cf.del(key('delmissing'), 'a'), 'Not found');
      assert.equal(await client.sendCommand(['CF.DEL', k, 'zzz']), RESP === 3 ? false : 0);
    });

    test('cf.info as the client returns it and on the wire', async () => {
      const k = key('info');
      await client.cf.reserve(k, 9, { EXPANSION: 0 });
      await client.cf.insert(k, ['3', '4', '4', '5']);
      await client.cf.del(k, '3');
      const expected = info([64, 4, 1, 3, 1, 2, 0, 20]);
      assert.deepEqual(await client.cf.info(k), expected);
      const raw = await client.sendCommand(['CF.INFO', k]);
      if (RESP === 3) {
        assert.deepEqual(raw, expected); // a map
        const asMap = await client.withTypeMapping({ [RESP_TYPES.MAP]: Map }).cf.info(k);
        assert.ok(asMap instanceof Map);
        assert.deepEqual([...asMap.keys()], INFO_NAMES);
      } else {
        assert.deepEqual(raw, INFO_NAMES.flatMap((n) => [n, expected[n]])); // a flat array
      }
      await rejectsWith(client.cf.info(key('infomissing')), 'ERR not found');
    });

    test('cf.scanDump and cf.loadChunk round trip into a new key', async () => {
      const bin = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
      const src = key('dumpsrc');
      const dst = key('dumpdst');
      await client.cf.reserve(src, 100, { EXPANSION: 2 });
      const items = Array.from({ length: 500 }, (_, i) => `item${i}`);
      for (let i = 0; i < 500; i += 100) await client.cf.insert(src, items.slice(i, i + 100));
      await client.cf.del(src, 'item0');
      const chunks = await dump(bin, src);
      assert.equal(chunks[0].iterator, 1);
      assert.equal(chunks[0].chunk.length, 38);
      const h = chunks[0].chunk;
      assert.deepEqual([h.readBigUInt64LE(0), h.readBigUInt64LE(8), h.readBigUInt64LE(16),
        h.readBigUInt64LE(24), h.readUInt16LE(32), h.readUInt16LE(34), h.readUInt16LE(36)],
      [499n, 64n, 1n, 3n, 2, 20, 2]);
      assert.deepEqual(chunks.slice(1).map((c) => [c.iterator, c.chunk.length]),
        [[129, 128], [385, 256], [897, 512]]);
      for (const { iterator, chunk } of chunks) {
        assert.equal(await client.cf.loadChunk(dst, iterator, chunk), 'OK');
      }
      assert.deepEqual(await client.cf.info(dst), await client.cf.info(src));
      assert.equal(await dbg(dst), await dbg(src));
      const present = await client.cf.mExists(dst, items);
      assert.deepEqual(present, [false, ...Array(499).fill(true)]);
      assert.deepEqual(await dump(bin, dst), chunks);
      // an empty filter dumps nothing
      await client.cf.reserve(key('dumpempty'), 62);
      assert.deepEqual(await client.cf.scanDump(key('dumpempty'), 0), { iterator: 0, chunk: null });
    });

    test('cf.scanDump and cf.loadChunk errors', async () => {
      const k = key('dumperr');
      await client.cf.add(k, 'x');
      const header = (await client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer })
        .cf.scanDump(k, 0)).chunk;
      await rejectsWith(client.cf.scanDump(key('dumpmissing'), 0), 'ERR not found');
      await rejectsWith(client.cf.scanDump(k, -1), 'Invalid position');
      await rejectsWith(client.cf.loadChunk(k, 1, header), 'ERR item exists');
      await rejectsWith(client.cf.loadChunk(key('dumpnew'), 1, header.subarray(0, 37)), 'Invalid header');
      await rejectsWith(client.cf.loadChunk(key('dumpnew'), 0, 'x'), 'Invalid position');
      await rejectsWith(client.cf.loadChunk(key('dumpnew'), 1, Buffer.alloc(38)), "Couldn't create filter!");
      await rejectsWith(client.cf.loadChunk(k, 1 << 20, Buffer.alloc(8)), "Couldn't load chunk!");
      assert.equal(await client.exists(key('dumpnew')), 0);
    });

    test('cf.compact and cf.debug through sendCommand', async () => {
      const k = key('compact');
      await client.cf.reserve(k, 8, { MAXITERATIONS: 50 });
      await client.cf.insert(k, Array.from({ length: 100 }, (_, i) => String(i)));
      const expected = 'bktsize:2 buckets:4 items:100 deletes:0 filters:13 max_iterations:50 expansion:1';
      assert.equal(await dbg(k), expected);
      assert.equal(await client.sendCommand(['CF.COMPACT', k]), 'OK');
      assert.equal(await dbg(k), expected);
      await rejectsWith(client.sendCommand(['CF.COMPACT', key('compactmissing')]),
        'Cuckoo filter was not found');
    });

    test('scanIterator by TYPE', async () => {
      const want = [];
      for (let i = 0; i < 7; i++) {
        want.push(key(`scan:cf${i}`));
        await client.cf.reserve(key(`scan:cf${i}`), 100);
      }
      await client.set(key('scan:string'), 'x');
      assert.equal(await client.type(key('scan:cf0')), 'MBbloomCF');
      const found = [];
      for await (const keys of client.scanIterator({ MATCH: key('scan:*'), TYPE: 'MBbloomCF', COUNT: 2 })) {
        found.push(...keys);
      }
      assert.deepEqual([...new Set(found)].sort(), want.sort());
    });

    test('multi/exec and pipelines', async () => {
      const k = key('multi');
      const replies = await client.multi()
        .cf.reserve(k, 1000, { BUCKETSIZE: 4 })
        .cf.add(k, 'a')
        .cf.addNX(k, 'a')
        .cf.insert(k, ['b', 'c'])
        .cf.insertNX(k, ['c', 'd'])
        .cf.exists(k, 'd')
        .cf.mExists(k, ['a', 'zz'])
        .cf.count(k, 'a')
        .cf.del(k, 'a')
        .cf.info(k)
        .exec();
      assert.deepEqual(replies, ['OK', true, false, [true, true], [0, 1], true, [true, false], 1,
        true, info([1080, 256, 1, 3, 1, 4, 1, 20])]);
      const piped = await client.multi().cf.add(k, 'e').cf.count(k, 'e').execAsPipeline();
      assert.deepEqual(piped, [true, 1]);
      // an error inside EXEC does not stop the other commands
      await assert.rejects(client.multi().cf.add(k, 'f').cf.reserve(k, 10).cf.exists(k, 'f').exec(),
        (err) => {
          assert.equal(err.constructor.name, 'MultiErrorReply');
          assert.deepEqual(err.errorIndexes, [1]);
          assert.equal(err.replies[0], true);
          assert.equal(err.replies[1].message, 'ERR item exists');
          assert.equal(err.replies[2], true);
          return true;
        });
    });

    test('a client pool under concurrent commands', async () => {
      const pool = createClientPool({ socket: { host: HOST, port: PORT }, RESP }, { minimum: 1, maximum: 8 });
      pool.on('error', () => {});
      await pool.connect();
      try {
        const k = key('pool');
        await pool.cf.reserve(k, 10000);
        // 8 racers ADDNX the same 100 items: at most one wins each (none only for an item
        // that is a false positive of the filter)
        const items = Array.from({ length: 100 }, (_, i) => `item${i}`);
        const racers = Array.from({ length: 8 }, async () => {
          const won = [];
          for (const item of items) if (await pool.cf.addNX(k, item)) won.push(item);
          return won;
        });
        const won = (await Promise.all(racers)).flat();
        assert.equal(new Set(won).size, won.length);
        assert.ok(won.length > 90, `only ${won.length} items won`);
        assert.equal((await pool.cf.info(k))['Number of items inserted'], won.length);
        assert.deepEqual(await pool.cf.mExists(k, items), Array(100).fill(true));
      } finally {
        await pool.close();
      }
    });
  });
}
