"""One module per mode of tools/bench, each with bench(run): default, scale, sweep, against, stores."""
