import { describe, expect, it } from 'vitest';
import { EventParser, type StreamMessage } from '../../../src/client/stream.js';

function parse(chunks: string[]): StreamMessage[] {
  const out: StreamMessage[] = [];
  const parser = new EventParser((m) => out.push(m));
  for (const c of chunks) parser.push(c);
  return out;
}

describe('EventParser (text/event-stream)', () => {
  it('dispatches events with their type, id and data; comments and retry lines are not events', () => {
    const text = 'retry: 3000\n\nid: 41\nevent: ready\ndata: {"seq":41}\n\n: heartbeat\n\nid: 42\nevent: change\ndata: {"seq":42}\n\n';
    expect(parse([text])).toEqual([
      { event: 'ready', id: '41', data: '{"seq":41}' },
      { event: 'change', id: '42', data: '{"seq":42}' },
    ]);
  });

  it('joins lines cut anywhere across chunks, CRLF included, and multi-line data', () => {
    const text = 'id: 7\r\nevent: change\r\ndata: a\r\ndata: b\r\n\r\ndata:plain\n\n';
    const chunks = text.split('');
    expect(parse(chunks)).toEqual([
      { event: 'change', id: '7', data: 'a\nb' },
      { event: 'message', id: '7', data: 'plain' },
    ]);
  });
});
