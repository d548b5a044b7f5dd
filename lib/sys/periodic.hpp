// A callback run on its own thread every interval until the object goes:
// progress lines while something long runs on the caller's thread (the
// stager's walk, pack's mksquashfs).  The destructor stops it at once and
// joins the thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace dlstage {

class Periodic {
public:
    // No thread at all when tick is empty.
    Periodic(std::chrono::duration<double> interval, std::function<void()> tick)
    {
        if (!tick)
            return;
        thread_ = std::thread([this, interval, tick = std::move(tick)] {
            std::unique_lock<std::mutex> lock(mutex_);
            while (!stop_.wait_for(lock, interval, [this] { return stopping_; }))
                tick();
        });
    }
    ~Periodic()
    {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        stop_.notify_all();
        if (thread_.joinable())
            thread_.join();
    }
    Periodic(const Periodic&) = delete;
    Periodic& operator=(const Periodic&) = delete;

private:
    std::mutex mutex_;
    std::condition_variable stop_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace dlstage
