package cuckood.compat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.AbstractTransaction;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.RedisProtocol;
import redis.clients.jedis.Response;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;
import redis.clients.jedis.bloom.CFInsertParams;
import redis.clients.jedis.bloom.CFReserveParams;
import redis.clients.jedis.commands.ProtocolCommand;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.util.KeyValue;
import redis.clients.jedis.util.SafeEncoder;

/**
 * cuckood through Jedis's cf* commands (UnifiedJedis / JedisPooled), in RESP2 and RESP3. Run by
 * scripts/compat.sh java, which starts the server and sets CUCKOOD_PORT. Expected values are
 * RedisBloom 2.8's (/work/shared/redisbloom-cf-reference.md).
 *
 * <p>Jedis gaps worked around: cfInsertNx returns List&lt;Boolean&gt;, so CF.INSERTNX's 0
 * ("exists") and -1 ("full") both read as false: the integers are checked with sendCommand.
 * There is no cfCompact / cfDebug: sendCommand with a command of our own. cfInfo returns a
 * HashMap (RedisBloom's field order is lost): the order is checked on the raw reply.
 */
class CuckooFilterTest {
  private static final String WRONGTYPE =
      "WRONGTYPE Operation against a key holding the wrong kind of value";
  private static final List<String> INFO_NAMES = List.of("Size", "Number of buckets",
      "Number of filters", "Number of items inserted", "Number of items deleted", "Bucket size",
      "Expansion rate", "Max iterations");

  private static final ProtocolCommand CF_DEBUG = () -> SafeEncoder.encode("CF.DEBUG");
  private static final ProtocolCommand CF_COMPACT = () -> SafeEncoder.encode("CF.COMPACT");
  private static final ProtocolCommand CF_ADD = () -> SafeEncoder.encode("CF.ADD");
  private static final ProtocolCommand CF_INSERT = () -> SafeEncoder.encode("CF.INSERT");
  private static final ProtocolCommand CF_INSERTNX = () -> SafeEncoder.encode("CF.INSERTNX");
  private static final ProtocolCommand CF_MEXISTS = () -> SafeEncoder.encode("CF.MEXISTS");
  private static final ProtocolCommand CF_INFO = () -> SafeEncoder.encode("CF.INFO");
  private static final ProtocolCommand CF_SCANDUMP = () -> SafeEncoder.encode("CF.SCANDUMP");
  private static final ProtocolCommand CF_RESERVE = () -> SafeEncoder.encode("CF.RESERVE");

  private static final Map<RedisProtocol, JedisPooled> CLIENTS = new EnumMap<>(RedisProtocol.class);
  private String testName;

  private static HostAndPort address() {
    String port = System.getenv("CUCKOOD_PORT");
    if (port == null || port.isEmpty()) {
      throw new IllegalStateException("CUCKOOD_PORT must name the server of scripts/compat.sh");
    }
    String host = System.getenv().getOrDefault("CUCKOOD_HOST", "127.0.0.1");
    return new HostAndPort(host, Integer.parseInt(port));
  }

  private static JedisPooled connect(RedisProtocol protocol, int poolSize) {
    GenericObjectPoolConfig<Connection> pool = new GenericObjectPoolConfig<>();
    pool.setMaxTotal(poolSize);
    pool.setMaxIdle(poolSize);
    return new JedisPooled(pool, address(), DefaultJedisClientConfig.builder()
        .protocol(protocol).socketTimeoutMillis(30000).build());
  }

  @BeforeAll
  static void connectAll() {
    for (RedisProtocol p : RedisProtocol.values()) {
      CLIENTS.put(p, connect(p, 8));
    }
    CLIENTS.get(RedisProtocol.RESP2).flushAll();
  }

  @AfterAll
  static void closeAll() {
    CLIENTS.values().forEach(JedisPooled::close);
  }

  @BeforeEach
  void name(TestInfo info) {
    testName = info.getTestMethod().get().getName();
  }

  private String key(RedisProtocol p, String name) {
    return "java:" + testName + ":" + p + ":" + name;
  }

  private static String debug(JedisPooled j, String key) {
    return SafeEncoder.encode((byte[]) j.sendCommand(CF_DEBUG, key));
  }

  /** The call must fail with exactly this server error text. */
  private static void fails(String message, Executable call) {
    JedisDataException e = assertThrows(JedisDataException.class, call);
    assertSame(JedisDataException.class, e.getClass());
    assertEquals(message, e.getMessage());
  }

  /** What sendCommand returns for a RedisBloom yes/no reply. */
  private static Object flag(RedisProtocol p, boolean v) {
    return p == RedisProtocol.RESP3 ? (Object) v : (Object) (v ? 1L : 0L);
  }

  private static Map<String, Object> info(long... values) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < values.length; i++) {
      m.put(INFO_NAMES.get(i), values[i]);
    }
    return m;
  }

  private static List<Boolean> bools(Boolean... values) {
    return Arrays.asList(values);
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void cfReserve(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    assertEquals("OK", j.cfReserve(key(p, "a"), 1000));
    assertEquals(info(1080, 512, 1, 0, 0, 2, 1, 20), j.cfInfo(key(p, "a")));
    assertEquals("OK", j.cfReserve(key(p, "b"), 1000,
        CFReserveParams.reserveParams().bucketSize(4).maxIterations(50).expansion(3)));
    assertEquals(info(1080, 256, 1, 0, 0, 4, 4, 50), j.cfInfo(key(p, "b")));
    assertEquals("OK", j.cfReserve(key(p, "c"), 10,
        CFReserveParams.reserveParams().bucketSize(1).expansion(0)));
    assertEquals("bktsize:1 buckets:16 items:0 deletes:0 filters:1 max_iterations:20 expansion:0",
        debug(j, key(p, "c")));
    assertEquals("MBbloomCF", j.type(key(p, "a")));

    fails("ERR item exists", () -> j.cfReserve(key(p, "a"), 1000));
    fails("Capacity must be at least (BucketSize * 2)", () -> j.cfReserve(key(p, "x"), 1));
    fails("BUCKETSIZE: value must be an integer between 1 and 255, inclusive.",
        () -> j.cfReserve(key(p, "x"), 100, CFReserveParams.reserveParams().bucketSize(0)));
    fails("MAXITERATIONS: value must be an integer between 1 and 65535, inclusive.",
        () -> j.cfReserve(key(p, "x"), 100, CFReserveParams.reserveParams().maxIterations(70000)));
    fails("EXPANSION: value must be an integer between 0 and 32768, inclusive.",
        () -> j.cfReserve(key(p, "x"), 100, CFReserveParams.reserveParams().expansion(-1)));
    fails("Bad capacity", () -> j.sendCommand(CF_RESERVE, key(p, "x"), "ten"));
    j.set(key(p, "str"), "x");
    fails(WRONGTYPE, () -> j.cfReserve(key(p, "str"), 100));
    assertFalse(j.exists(key(p, "x")));
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void cfAddAndAddNx(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    String k = key(p, "k");
    assertTrue(j.cfAdd(k, "a")); // auto-created with the defaults
    assertTrue(j.cfAdd(k, "a")); // another copy
    assertEquals(2L, j.cfCount(k, "a"));
    assertFalse(j.cfAddNx(k, "a"));
    assertTrue(j.cfAddNx(k, "b"));
    assertTrue(j.cfAddNx(k, "")); // the empty item
    assertTrue(j.cfAddNx(k, "caf\u00e9"));
    assertTrue(j.cfExists(k, "caf\u00e9"));
    assertEquals(info(1080, 512, 1, 5, 0, 2, 1, 20), j.cfInfo(k));
    assertEquals(flag(p, true), j.sendCommand(CF_ADD, k, "c"));
    j.set(key(p, "str"), "x");
    fails(WRONGTYPE, () -> j.cfAdd(key(p, "str"), "a"));
    fails(WRONGTYPE, () -> j.cfAddNx(key(p, "str"), "a"));

    j.cfReserve(key(p, "full"), 4, CFReserveParams.reserveParams().expansion(0));
    for (String item : List.of("1", "2", "3", "4")) {
      assertTrue(j.cfAdd(key(p, "full"), item));
    }
    fails("Filter is full", () -> j.cfAdd(key(p, "full"), "5"));

    j.cfReserve(key(p, "max"), 4);
    AbstractPipeline pipe = j.pipelined();
    List<Response<Boolean>> adds = new ArrayList<>();
    for (int i = 0; i < 124; i++) {
      adds.add(pipe.cfAdd(key(p, "max"), Integer.toString(i)));
    }
    pipe.sync();
    pipe.close();
    for (Response<Boolean> r : adds) {
      assertTrue(r.get());
    }
    assertEquals(32L, j.cfInfo(key(p, "max")).get("Number of filters"));
    fails("Maximum expansions reached", () -> j.cfAdd(key(p, "max"), "2048"));
    fails("Maximum expansions reached", () -> j.cfAddNx(key(p, "max"), "0"));
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void cfInsert(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    assertEquals(bools(true, true, true), j.cfInsert(key(p, "a"), "x", "y", "z"));
    assertEquals("bktsize:2 buckets:512 items:3 deletes:0 filters:1 max_iterations:20 expansion:1",
        debug(j, key(p, "a")));
    assertEquals(bools(true),
        j.cfInsert(key(p, "b"), CFInsertParams.insertParams().capacity(10000), "x"));
    assertEquals("bktsize:2 buckets:8192 items:1 deletes:0 filters:1 max_iterations:20 expansion:1",
        debug(j, key(p, "b")));
    assertEquals(bools(true),
        j.cfInsert(key(p, "b"), CFInsertParams.insertParams().capacity(10).noCreate(), "w"));
    fails("ERR not found",
        () -> j.cfInsert(key(p, "missing"), CFInsertParams.insertParams().noCreate(), "x"));
    assertFalse(j.exists(key(p, "missing")));
    fails("Capacity must be at least (BucketSize * 2)",
        () -> j.cfInsert(key(p, "c"), CFInsertParams.insertParams().capacity(3), "x"));
    fails("ERR wrong number of arguments for 'cf.insert' command", () -> j.cfInsert(key(p, "c")));
    fails("Unknown argument received",
        () -> j.sendCommand(CF_INSERT, key(p, "c"), "FOO", "ITEMS", "a"));

    // a full filter: :-1 in RESP2, #f in RESP3; Jedis reads both as false
    j.cfReserve(key(p, "full"), 2, CFReserveParams.reserveParams().bucketSize(1).expansion(0));
    assertEquals(bools(true, true, false, false), j.cfInsert(key(p, "full"), "1", "1", "1", "1"));
    Object raw = j.sendCommand(CF_INSERT, key(p, "full"), "ITEMS", "1");
    assertEquals(List.of(p == RedisProtocol.RESP3 ? (Object) false : (Object) (-1L)), raw);
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void cfInsertNx(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    assertEquals(bools(true, true, false), j.cfInsertNx(key(p, "a"), "a", "b", "a"));
    assertEquals(bools(false, true), j.cfInsertNx(key(p, "a"), "b", "c"));
    assertEquals(bools(true),
        j.cfInsertNx(key(p, "b"), CFInsertParams.insertParams().capacity(100), "a"));
    assertEquals("bktsize:2 buckets:64 items:1 deletes:0 filters:1 max_iterations:20 expansion:1",
        debug(j, key(p, "b")));
    fails("ERR not found",
        () -> j.cfInsertNx(key(p, "missing"), CFInsertParams.insertParams().noCreate(), "a"));
    // integers on the wire in both protocols: 1 added, 0 present, -1 full
    j.cfReserve(key(p, "full"), 2, CFReserveParams.reserveParams().bucketSize(1).expansion(0));
    assertEquals(bools(true, true), j.cfInsert(key(p, "full"), "1", "1"));
    assertEquals(List.of(0L, -1L), j.sendCommand(CF_INSERTNX, key(p, "full"), "ITEMS", "1", "2"));
    assertEquals(List.of(1L, 0L), j.sendCommand(CF_INSERTNX, key(p, "a"), "ITEMS", "d", "d"));
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void cfExistsMExistsCount(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    String k = key(p, "k");
    j.cfInsert(k, "a", "b", "b");
    assertTrue(j.cfExists(k, "a"));
    assertFalse(j.cfExists(k, "nope"));
    assertEquals(bools(true, false, true), j.cfMExists(k, "a", "nope", "b"));
    assertFalse(j.cfExists(key(p, "missing"), "a"));
    assertEquals(bools(false, false), j.cfMExists(key(p, "missing"), "a", "b"));
    j.set(key(p, "str"), "x"); // another type answers "no", not WRONGTYPE
    assertFalse(j.cfExists(key(p, "str"), "a"));
    assertEquals(List.of(flag(p, true), flag(p, false)), j.sendCommand(CF_MEXISTS, k, "a", "no"));

    assertEquals(2L, j.cfCount(k, "b"));
    assertEquals(0L, j.cfCount(k, "nope"));
    assertEquals(0L, j.cfCount(key(p, "missing"), "a"));
    j.cfReserve(key(p, "tiny"), 4); // both candidate buckets are one bucket: counted twice
    j.cfAdd(key(p, "tiny"), "a");
    assertEquals(2L, j.cfCount(key(p, "tiny"), "a"));
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void cfDel(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    String k = key(p, "k");
    j.cfAdd(k, "a");
    j.cfAdd(k, "a");
    assertTrue(j.cfDel(k, "a"));
    assertEquals(1L, j.cfCount(k, "a"));
    assertTrue(j.cfDel(k, "a"));
    assertFalse(j.cfDel(k, "a"));
    Map<String, Object> info = j.cfInfo(k);
    assertEquals(List.of(0L, 2L),
        List.of(info.get("Number of items inserted"), info.get("Number of items deleted")));
    fails("Not found", () -> j.cfDel(key(p, "missing"), "a"));
    j.set(key(p, "str"), "x");
    fails("Not found", () -> j.cfDel(key(p, "str"), "a"));
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void cfInfo(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    String k = key(p, "k");
    j.cfReserve(k, 9, CFReserveParams.reserveParams().expansion(0));
    j.cfInsert(k, "3", "4", "4", "5");
    j.cfDel(k, "3");
    Map<String, Object> expected = info(64, 4, 1, 3, 1, 2, 0, 20);
    assertEquals(expected, j.cfInfo(k));
    // on the wire: a flat array (RESP2) or a map (RESP3), in RedisBloom's order
    List<?> raw = (List<?>) j.sendCommand(CF_INFO, k);
    List<Object> flat = new ArrayList<>();
    for (Object o : raw) {
      if (p == RedisProtocol.RESP3) {
        KeyValue<?, ?> kv = (KeyValue<?, ?>) o;
        flat.add(SafeEncoder.encode((byte[]) kv.getKey()));
        flat.add(kv.getValue());
      } else {
        flat.add(o instanceof byte[] ? SafeEncoder.encode((byte[]) o) : o);
      }
    }
    List<Object> want = new ArrayList<>();
    expected.forEach((name, value) -> {
      want.add(name);
      want.add(value);
    });
    assertEquals(want, flat);
    fails("ERR not found", () -> j.cfInfo(key(p, "missing")));
    j.set(key(p, "str"), "x");
    fails(WRONGTYPE, () -> j.cfInfo(key(p, "str")));
  }

  private static List<Map.Entry<Long, byte[]>> dump(JedisPooled j, String key) {
    List<Map.Entry<Long, byte[]>> chunks = new ArrayList<>();
    long iter = 0;
    while (true) {
      Map.Entry<Long, byte[]> e = j.cfScanDump(key, iter);
      iter = e.getKey();
      if (iter == 0) {
        assertNull(e.getValue());
        return chunks;
      }
      chunks.add(e);
    }
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void cfScanDumpLoadChunkRoundTrip(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    String src = key(p, "src");
    String dst = key(p, "dst");
    j.cfReserve(src, 100, CFReserveParams.reserveParams().expansion(2));
    String[] items = new String[500];
    for (int i = 0; i < 500; i++) {
      items[i] = "item" + i;
    }
    for (int i = 0; i < 500; i += 100) {
      j.cfInsert(src, Arrays.copyOfRange(items, i, i + 100));
    }
    j.cfDel(src, "item0");
    List<Map.Entry<Long, byte[]>> chunks = dump(j, src);
    assertEquals(4, chunks.size());
    assertEquals(1L, chunks.get(0).getKey());
    ByteBuffer h = ByteBuffer.wrap(chunks.get(0).getValue()).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(38, h.remaining());
    assertEquals(List.of(499L, 64L, 1L, 3L, 2L, 20L, 2L), List.of(h.getLong(), h.getLong(),
        h.getLong(), h.getLong(), (long) h.getShort(), (long) h.getShort(), (long) h.getShort()));
    assertEquals(List.of(129L, 385L, 897L),
        List.of(chunks.get(1).getKey(), chunks.get(2).getKey(), chunks.get(3).getKey()));
    assertEquals(List.of(128, 256, 512), List.of(chunks.get(1).getValue().length,
        chunks.get(2).getValue().length, chunks.get(3).getValue().length));
    for (Map.Entry<Long, byte[]> c : chunks) {
      assertEquals("OK", j.cfLoadChunk(dst, c.getKey(), c.getValue()));
    }
    assertEquals(j.cfInfo(src), j.cfInfo(dst));
    assertEquals(debug(j, src), debug(j, dst));
    List<Boolean> want = new ArrayList<>(Collections.nCopies(500, true));
    want.set(0, false);
    assertEquals(want, j.cfMExists(dst, items));
    List<Map.Entry<Long, byte[]>> again = dump(j, dst);
    assertEquals(chunks.size(), again.size());
    for (int i = 0; i < chunks.size(); i++) {
      assertEquals(chunks.get(i).getKey(), again.get(i).getKey());
      assertArrayEquals(chunks.get(i).getValue(), again.get(i).getValue());
    }
    assertTrue(j.cfAdd(dst, "new")); // the copy is a filter of its own
    assertFalse(j.cfExists(src, "new"));

    // an empty filter dumps nothing: [0, nil]
    j.cfReserve(key(p, "empty"), 62);
    Map.Entry<Long, byte[]> end = j.cfScanDump(key(p, "empty"), 0);
    assertEquals(0L, end.getKey());
    assertNull(end.getValue());
    assertEquals(Arrays.asList(0L, null), j.sendCommand(CF_SCANDUMP, key(p, "empty"), "0"));
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void cfScanDumpLoadChunkErrors(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    String k = key(p, "k");
    j.cfAdd(k, "x");
    byte[] header = j.cfScanDump(k, 0).getValue();
    fails("ERR not found", () -> j.cfScanDump(key(p, "missing"), 0));
    fails("Invalid position", () -> j.cfScanDump(k, -1));
    fails("ERR item exists", () -> j.cfLoadChunk(k, 1, header));
    fails("Invalid header", () -> j.cfLoadChunk(key(p, "new"), 1, Arrays.copyOf(header, 37)));
    fails("Invalid position",
        () -> j.cfLoadChunk(key(p, "new"), 0, "x".getBytes(StandardCharsets.UTF_8)));
    fails("Couldn't create filter!", () -> j.cfLoadChunk(key(p, "new"), 1, new byte[38]));
    fails("Couldn't load chunk!", () -> j.cfLoadChunk(k, 1 << 20, new byte[8]));
    assertFalse(j.exists(key(p, "new")));
    j.set(key(p, "str"), "x");
    fails(WRONGTYPE, () -> j.cfScanDump(key(p, "str"), 0));
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void cfCompactAndDebugRaw(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    String k = key(p, "k");
    j.cfReserve(k, 8, CFReserveParams.reserveParams().maxIterations(50));
    String[] items = new String[100];
    for (int i = 0; i < 100; i++) {
      items[i] = Integer.toString(i);
    }
    j.cfInsert(k, items);
    String want = "bktsize:2 buckets:4 items:100 deletes:0 filters:13 max_iterations:50 expansion:1";
    assertEquals(want, debug(j, k));
    assertEquals("OK", SafeEncoder.encode((byte[]) j.sendCommand(CF_COMPACT, k)));
    assertEquals(want, debug(j, k));
    fails("Cuckoo filter was not found", () -> j.sendCommand(CF_COMPACT, key(p, "missing")));
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void scanByType(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    Set<String> cfKeys = new HashSet<>();
    for (int i = 0; i < 7; i++) {
      cfKeys.add(key(p, "cf" + i));
      j.cfReserve(key(p, "cf" + i), 100);
    }
    j.set(key(p, "string"), "x");
    assertEquals("MBbloomCF", j.type(key(p, "cf0")));
    ScanParams params = new ScanParams().match(key(p, "*")).count(2);
    Set<String> found = new HashSet<>();
    String cursor = ScanParams.SCAN_POINTER_START;
    do {
      ScanResult<String> page = j.scan(cursor, params, "MBbloomCF");
      found.addAll(page.getResult());
      cursor = page.getCursor();
    } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
    assertEquals(cfKeys, found);
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void pipelineAndTransaction(RedisProtocol p) {
    JedisPooled j = CLIENTS.get(p);
    String k = key(p, "pipe");
    try (AbstractPipeline pipe = j.pipelined()) {
      Response<String> reserve = pipe.cfReserve(k, 1000,
          CFReserveParams.reserveParams().bucketSize(4));
      Response<Boolean> add = pipe.cfAdd(k, "a");
      Response<Boolean> addNx = pipe.cfAddNx(k, "a");
      Response<List<Boolean>> insert = pipe.cfInsert(k, "b", "c");
      Response<Boolean> exists = pipe.cfExists(k, "c");
      Response<List<Boolean>> mexists = pipe.cfMExists(k, "a", "zz");
      Response<Long> count = pipe.cfCount(k, "a");
      Response<Boolean> del = pipe.cfDel(k, "a");
      Response<Map<String, Object>> info = pipe.cfInfo(k);
      Response<String> again = pipe.cfReserve(k, 10);
      pipe.sync();
      assertEquals("OK", reserve.get());
      assertEquals(List.of(true, false, true, true),
          List.of(add.get(), addNx.get(), exists.get(), del.get()));
      assertEquals(bools(true, true), insert.get());
      assertEquals(bools(true, false), mexists.get());
      assertEquals(1L, count.get());
      assertEquals(info(1080, 256, 1, 2, 1, 4, 1, 20), info.get());
      fails("ERR item exists", again::get);
    }
    String t = key(p, "tx");
    try (AbstractTransaction tx = j.multi()) {
      Response<Boolean> add = tx.cfAdd(t, "a");
      Response<List<Boolean>> insert = tx.cfInsert(t, "b");
      Response<Long> count = tx.cfCount(t, "a");
      Response<String> again = tx.cfReserve(t, 10);
      Response<Boolean> exists = tx.cfExists(t, "b");
      List<Object> results = tx.exec();
      assertEquals(5, results.size());
      assertTrue(add.get());
      assertEquals(bools(true), insert.get());
      assertEquals(1L, count.get());
      fails("ERR item exists", again::get); // an error inside EXEC; the rest still ran
      assertTrue(exists.get());
    }
  }

  @ParameterizedTest
  @EnumSource(RedisProtocol.class)
  void poolUnderEightThreads(RedisProtocol p) throws Exception {
    try (JedisPooled j = connect(p, 8)) {
      String k = key(p, "k");
      j.cfReserve(k, 10000);
      String[] items = new String[100];
      for (int i = 0; i < 100; i++) {
        items[i] = "item" + i;
      }
      ExecutorService pool = Executors.newFixedThreadPool(8);
      List<String> won = new ArrayList<>();
      try {
        List<Future<List<String>>> futures = new ArrayList<>();
        for (int g = 0; g < 8; g++) {
          final int id = g;
          futures.add(pool.submit(() -> {
            List<String> mine = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
              if (j.cfAddNx(k, items[i])) {
                mine.add(items[i]);
              }
              assertTrue(j.cfAdd(k, "t" + id + ":" + i));
            }
            return mine;
          }));
        }
        for (Future<List<String>> f : futures) {
          won.addAll(f.get());
        }
      } finally {
        pool.shutdown();
      }
      // at most one thread wins each item (none only for a false positive of the filter)
      assertEquals(won.size(), new HashSet<>(won).size(), won.toString());
      assertTrue(won.size() > 90, "only " + won.size() + " items won");
      assertEquals(won.size() + 800L, j.cfInfo(k).get("Number of items inserted"));
      assertEquals(Collections.nCopies(100, true), j.cfMExists(k, items));
    }
  }
}
