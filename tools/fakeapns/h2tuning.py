"""Speed-ups of hyper-h2 and hpack for tools/fake-apns (pure Python, so per-request work counts).

- decode_huffman is memoised (bounded): a provider sends the same Huffman-
  coded provider token (authorization) and topic on every request, and
  hpack's pure-Python decoder was the largest single cost.
- hpack's per-header debug logging calls become no-ops.
- answers' headers are not Huffman-coded (a few bytes more, half the cost of
  encoding them: apns-id, a new value each time, is most of it).
- Connection.open_inbound_streams: h2 counts open streams by walking every
  stream on each new stream (O(streams in flight), so O(n^2) with 1000 in
  flight); here it is a running count (streams opened minus streams the fake
  ended), exact or above the truth (a stream the client reset still counts),
  and h2's exact walk runs only when that count reaches the limit and every
  1024 streams (which also drops closed streams from h2's table).
"""
import hpack.hpack
import hpack.huffman_table
import h2.connection

HUFFMAN_CACHE_LIMIT = 4096
_huffman_cache = {}
_decode_huffman = hpack.huffman_table.decode_huffman


def decode_huffman(data):
    value = _huffman_cache.get(data)
    if value is None:
        value = _decode_huffman(data)
        if len(_huffman_cache) >= HUFFMAN_CACHE_LIMIT:
            _huffman_cache.clear()
        _huffman_cache[bytes(data)] = value
    return value


class _Quiet:
    def debug(self, *args, **kwargs):
        pass


hpack.hpack.decode_huffman = decode_huffman
hpack.hpack.log = _Quiet()


class Connection(h2.connection.H2Connection):
    def __init__(self, config):
        super().__init__(config=config)
        self.opened = 0
        self.ended = 0
        encode = self.encoder.encode
        self.encoder.encode = lambda headers, huffman=False: encode(headers, huffman=False)

    @property
    def open_inbound_streams(self):
        # h2 asks this just before it opens a new inbound stream.
        self.opened += 1
        count = self.opened - 1 - self.ended
        if count + 1 > self.local_settings.max_concurrent_streams or self.opened % 1024 == 0:
            count = self._open_streams(1)
            self.ended = self.opened - 1 - count
        return count
