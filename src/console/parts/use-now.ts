/** This browser's clock, re-read every `everyMs`, so times shown relative to now ("5 s ago") stay true. */
import { useEffect, useState } from 'preact/hooks';

export function useNow(everyMs: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
}
