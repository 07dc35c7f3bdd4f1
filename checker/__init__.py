from pipeproof.checker.jitcache import drop_stale_cache

drop_stale_cache()
