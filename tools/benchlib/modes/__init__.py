"""One module per mode of tools/bench, each with run(run): default, scale, sweep, against, stores."""
