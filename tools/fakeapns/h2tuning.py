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
- a stream opened beyond SETTINGS_MAX_CONCURRENT_STREAMS is refused
  (RST_STREAM REFUSED_STREAM, a stream error RFC 9113 section 5.1.2 allows
  and APNs uses) rather than ending the connection as h2 does: a client may
  open streams before it has read the limit. Its headers are still decoded
  (HPACK state is the connection's) and its DATA frames are dropped as those
  of a reset stream.
"""
import hpack.hpack
import hpack.huffman_table
import h2.connection
import h2.errors
import h2.exceptions
import h2.stream
from hyperframe.frame import RstStreamFrame

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

    def _receive_headers_frame(self, frame):
        try:
            return super()._receive_headers_frame(frame)
        except h2.exceptions.TooManyStreamsError:
            h2.connection._decode_headers(self.decoder, frame.data)
            self.highest_inbound_stream_id = max(self.highest_inbound_stream_id, frame.stream_id)
            self._closed_streams[frame.stream_id] = h2.stream.StreamClosedBy.SEND_RST_STREAM
            refusal = RstStreamFrame(frame.stream_id)
            refusal.error_code = h2.errors.ErrorCodes.REFUSED_STREAM
            return [refusal], []
